package backend

import "unicode/utf8"

// MaxNameLength bounds topic, group, consumer and prefix names, so key names stay small.
const MaxNameLength = 200

// ValidateName checks a topic, group, consumer or prefix name. kind names the field in the
// error. Names are 1 to MaxNameLength bytes of printable ASCII without spaces, braces or the
// glob characters *?[]\ ; only topics may hold ':'. Braces would break the {prefix:topic}
// hash tag that keeps every key of a topic in one Cluster slot; glob characters would make
// SCAN and ACL key patterns match more than one topic; and a ':' elsewhere could make two
// names share keys (prefix "a:b" with topic "c" and prefix "a" with topic "b:c" would share
// one tag).
func ValidateName(kind, name string) error {
	if name == "" {
		return &NameError{Kind: kind, Name: name, Reason: "must not be empty"}
	}
	if len(name) > MaxNameLength {
		return &NameError{Kind: kind, Name: name, Reason: "longer than 200 bytes"}
	}
	if !utf8.ValidString(name) {
		return &NameError{Kind: kind, Name: name, Reason: "not valid UTF-8"}
	}
	for _, r := range name {
		switch {
		case r <= ' ' || r >= 0x7f:
			return &NameError{Kind: kind, Name: name, Reason: "only printable ASCII without spaces is allowed"}
		case r == '{' || r == '}':
			return &NameError{Kind: kind, Name: name, Reason: "braces are reserved for the key hash tag"}
		case r == '*' || r == '?' || r == '[' || r == ']' || r == '\\':
			return &NameError{Kind: kind, Name: name, Reason: "glob characters *?[]\\ are not allowed"}
		case r == ':' && kind != "topic":
			return &NameError{Kind: kind, Name: name, Reason: "':' separates key parts and is not allowed here"}
		}
	}
	return nil
}
