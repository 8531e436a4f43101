// This file checks ValidName against its rules, one row per rule, and that
// its control-character test is unicode.IsControl (core/ may not import
// unicode, so names.go carries its own).
package registry

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

func TestValidName(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"a plain name", "orders", true},
		{"UTF-8 letters", "commandes-été", true},
		{"dots inside", "a.b..c", true},
		{"exactly NameMax bytes", strings.Repeat("x", NameMax), true},
		{"15 hex digits", "0123456789abcde", true},
		{"17 hex digits", "0123456789abcdef0", true},
		{"16 characters, not all hex", "0123456789abcdeg", true},
		{"empty", "", false},
		{"one byte past NameMax", strings.Repeat("x", NameMax+1), false},
		{"not UTF-8", "a\xffb", false},
		{"a slash", "tenant/name", false},
		{"a lone slash", "/", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"a NUL", "a\x00b", false},
		{"a newline", "a\nb", false},
		{"DEL", "a\x7fb", false},
		{"a C1 control", "a\u0085b", false},
		{"16 lower hex digits", "0123456789abcdef", false},
		{"16 upper hex digits", "0123456789ABCDEF", false},
		{"16 mixed hex digits", "deadBEEF00000000", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidName(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidName(%q) = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadName) {
				t.Errorf("error %v does not wrap ErrBadName", err)
			}
		})
	}
}

func TestIsControlIsUnicodeIsControl(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if isControl(r) != unicode.IsControl(r) {
			t.Fatalf("isControl(%U) = %v, unicode.IsControl says %v", r, isControl(r), unicode.IsControl(r))
		}
	}
}
