package registry

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultTenant is the tenant the cell's first coordinator creates, and
// the one a journal name written without a tenant belongs to.
const DefaultTenant = "default"

// NameMax is the longest tenant or journal name, in bytes.
const NameMax = 128

// hexIDLen is the length of a journal id's hex form (a 64-bit half as 16
// hex digits), which no name may look like.
const hexIDLen = 16

// ValidName reports why s cannot name a tenant or a journal (nil if it
// can). A name is written TENANT/NAME and printed where ids are printed
// in hex, so it is: non-empty, at most NameMax bytes of valid UTF-8,
// without control characters or '/', neither "." nor "..", and not
// exactly 16 hex digits (a name never reads as an id). The error wraps
// ErrBadName.
func ValidName(s string) error {
	switch {
	case s == "":
		return badName("empty")
	case len(s) > NameMax:
		return badName(fmt.Sprintf("%d bytes, more than %d", len(s), NameMax))
	case !utf8.ValidString(s):
		return badName("not valid UTF-8")
	case s == "." || s == "..":
		return badName(fmt.Sprintf("%q is reserved", s))
	case strings.ContainsRune(s, '/'):
		return badName("contains '/'")
	case looksLikeHexID(s):
		return badName(fmt.Sprintf("%q reads as a hex id", s))
	}
	for i, r := range s {
		if isControl(r) {
			return badName(fmt.Sprintf("control character %U at byte %d", r, i))
		}
	}
	return nil
}

// ValidTenantName is ValidName, and refuses a name made of hex digits
// alone: a reference TENANT/NAME whose tenant half is hex is a journal id
// (two hex halves), so no tenant may be named like one.
func ValidTenantName(s string) error {
	if err := ValidName(s); err != nil {
		return err
	}
	if allHex(s) && len(s) <= hexIDLen {
		return badName(fmt.Sprintf("tenant %q reads as the first half of a hex id", s))
	}
	return nil
}

func badName(reason string) error { return fmt.Errorf("%w: %s", ErrBadName, reason) }

// isControl is unicode.IsControl (core/ may not import unicode): the C0
// controls, DEL and the C1 controls.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// looksLikeHexID reports whether s is exactly 16 hex digits (either case).
func looksLikeHexID(s string) bool { return len(s) == hexIDLen && allHex(s) }

// allHex reports whether s is non-empty and made of hex digits alone.
func allHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
