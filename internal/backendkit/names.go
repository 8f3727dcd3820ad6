package backendkit

import "github.com/relq/relq/pubsub"

// ValidateNames validates names with pubsub.ValidateName, in order, returning the first
// *pubsub.NameError. Pairs are kind, name: "topic", p.Topic, "group", p.Group, ...
func ValidateNames(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := pubsub.ValidateName(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}
