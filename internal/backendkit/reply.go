package backendkit

import "strconv"

// Int reads an integer reply element (an integer, or a string holding one; else 0).
func Int(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

// Ints reads a reply of integers, passing err on.
func Ints(res []any, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(res))
	for i, v := range res {
		out[i] = Int(v)
	}
	return out, nil
}
