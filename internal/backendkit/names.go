package backendkit

import "github.com/relq/relq/backend"

// ValidateNames validates names with backend.ValidateName, in order, returning the first
// *backend.NameError. Pairs are kind, name: "topic", p.Topic, "group", p.Group, ...
func ValidateNames(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := backend.ValidateName(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}
