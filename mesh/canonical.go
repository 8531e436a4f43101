package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical JSON is what every signature covers. It is a function of the
// parsed value, not of the bytes it came in, so any two encodings of one value
// sign alike, and Canonical(Canonical(x)) == Canonical(x):
//
//	objects   keys sorted by byte order at every depth; a repeated key is refused
//	spacing   none
//	strings   UTF-8 written raw; only '"', '\\' and U+0000..U+001F are escaped,
//	          as \" \\ \b \f \n \r \t or \u00xx (lowercase hex)
//	integers  plain decimal, no sign on zero ("-0" is "0")
//	others    as the float64 they parse to: integral values below 1e21 in plain
//	          decimal, every other value in strconv's shortest 'g' form
//	nesting   at most canonicalDepthMax levels
//
// The format is frozen: changing it invalidates every stored signature.

// canonicalDepthMax bounds the nesting of a canonical value.
const canonicalDepthMax = 32

// ErrNotCanonicalizable marks input that is not one JSON value the canonical
// form can represent (bad syntax, a repeated key, a trailing value, too deep).
var ErrNotCanonicalizable = errors.New("paros/mesh: not canonical JSON")

// Canonical returns the canonical encoding of the single JSON value in data.
func Canonical(data []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data))
	if err := appendCanonical(&out, data); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// appendCanonical writes the canonical encoding of data to out.
func appendCanonical(out *bytes.Buffer, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := canonicalValue(out, dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data", ErrNotCanonicalizable)
	}
	return nil
}

func canonicalValue(out *bytes.Buffer, dec *json.Decoder, depth int) error {
	if depth > canonicalDepthMax {
		return fmt.Errorf("%w: nested deeper than %d", ErrNotCanonicalizable, canonicalDepthMax)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotCanonicalizable, err)
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return canonicalObject(out, dec, depth)
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := canonicalValue(out, dec, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%w: %v", ErrNotCanonicalizable, err)
			}
			out.WriteByte(']')
			return nil
		}
		return fmt.Errorf("%w: unexpected %q", ErrNotCanonicalizable, v)
	case string:
		writeCanonicalString(out, v)
	case json.Number:
		n, err := canonicalNumber(string(v))
		if err != nil {
			return err
		}
		out.WriteString(n)
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("%w: unexpected token %T", ErrNotCanonicalizable, tok)
	}
	return nil
}

func canonicalObject(out *bytes.Buffer, dec *json.Decoder, depth int) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotCanonicalizable, err)
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%w: object key is not a string", ErrNotCanonicalizable)
		}
		var val bytes.Buffer
		if err := canonicalValue(&val, dec, depth+1); err != nil {
			return err
		}
		members = append(members, member{key, val.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: %v", ErrNotCanonicalizable, err)
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].key == m.key {
				return fmt.Errorf("%w: repeated key %q", ErrNotCanonicalizable, m.key)
			}
			out.WriteByte(',')
		}
		writeCanonicalString(out, m.key)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return nil
}

// canonicalNumber returns the canonical text of a JSON number literal.
func canonicalNumber(lit string) (string, error) {
	if isJSONInteger(lit) {
		if lit == "-0" {
			return "0", nil
		}
		return lit, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("%w: number %q out of range", ErrNotCanonicalizable, lit)
	}
	if f == 0 {
		return "0", nil
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64), nil // integral: as encoding/json writes it
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// isJSONInteger reports whether lit is -?(0|[1-9][0-9]*).
func isJSONInteger(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// writeCanonicalString writes s as a canonical JSON string. Invalid UTF-8 is
// written as U+FFFD, as encoding/json decodes it. Runs of bytes that need
// no escape are written at once.
func writeCanonicalString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			out.WriteString(s[start:i])
			out.WriteString("\uFFFD")
			i++
			start = i
			continue
		}
		out.WriteString(s[start:i])
		switch c {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xf])
		}
		i++
		start = i
	}
	out.WriteString(s[start:])
	out.WriteByte('"')
}
