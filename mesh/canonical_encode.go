package mesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// canonicalMarshal returns the canonical JSON of v, equal to
// Canonical(json.Marshal(v)), without the round trip through a decoder: it
// walks v by reflection with each struct's fields sorted by JSON name once
// per type. It panics on a value encoding/json could not marshal: callers
// pass plain data types of this package, so a failure is a programmer error.
func canonicalMarshal(v any) []byte {
	var buf bytes.Buffer
	encodeCanonical(&buf, reflect.ValueOf(v))
	return buf.Bytes()
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func encodeCanonical(buf *bytes.Buffer, v reflect.Value) {
	if !v.IsValid() {
		buf.WriteString("null")
		return
	}
	t := v.Type()
	if t.Implements(marshalerType) && !(t.Kind() == reflect.Pointer && v.IsNil()) {
		raw, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err == nil {
			err = appendCanonical(buf, raw)
		}
		if err != nil {
			panic(fmt.Sprintf("paros/mesh: canonical %s: %v", t, err))
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		writeCanonicalString(buf, v.String())
	case reflect.Bool:
		buf.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		n, err := canonicalNumber(strconv.FormatFloat(v.Float(), 'g', -1, 64))
		if err != nil {
			panic(fmt.Sprintf("paros/mesh: canonical %s: %v", t, err))
		}
		buf.WriteString(n)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return
		}
		encodeCanonical(buf, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			buf.WriteString("null")
			return
		}
		if t.Elem().Kind() == reflect.Uint8 {
			raw, _ := json.Marshal(v.Interface()) // base64, as encoding/json
			buf.Write(raw)
			return
		}
		fallthrough
	case reflect.Array:
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeCanonical(buf, v.Index(i))
		}
		buf.WriteByte(']')
	case reflect.Map:
		if v.IsNil() {
			buf.WriteString("null")
			return
		}
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("paros/mesh: canonical %s: map keys must be strings", t))
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonicalString(buf, k.String())
			buf.WriteByte(':')
			encodeCanonical(buf, v.MapIndex(k))
		}
		buf.WriteByte('}')
	case reflect.Struct:
		buf.WriteByte('{')
		first := true
		for _, f := range structPlan(t) {
			fv := v.Field(f.index)
			if f.omitEmpty && isEmptyValue(fv) {
				continue
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			writeCanonicalString(buf, f.name)
			buf.WriteByte(':')
			encodeCanonical(buf, fv)
		}
		buf.WriteByte('}')
	default:
		panic(fmt.Sprintf("paros/mesh: canonical %s: unsupported kind", t))
	}
}

type fieldPlan struct {
	name      string
	index     int
	omitEmpty bool
}

var structPlans sync.Map // reflect.Type -> []fieldPlan

// structPlan lists t's exported JSON fields sorted by name. Embedded
// structs are not supported (none of this package's data types has one).
func structPlan(t reflect.Type) []fieldPlan {
	if p, ok := structPlans.Load(t); ok {
		return p.([]fieldPlan)
	}
	var plan []fieldPlan
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			panic(fmt.Sprintf("paros/mesh: canonical %s: embedded field %s", t, f.Name))
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		plan = append(plan, fieldPlan{name: name, index: i, omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	slices.SortFunc(plan, func(a, b fieldPlan) int { return strings.Compare(a.name, b.name) })
	structPlans.Store(t, plan)
	return plan
}

// isEmptyValue is encoding/json's notion of empty for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
