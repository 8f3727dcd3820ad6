package partition

import (
	"strconv"
	"strings"
)

// A delivery of a partitioned topic is known outside by "<partition>:<ID in the partition>", so
// that an ack, a nack or an operator's command reaches the partition that holds it.

// OuterID names delivery id of partition i as the partitioned topic's.
func OuterID(i int, id string) string { return strconv.Itoa(i) + ":" + id }

// SplitID returns the partition and inner ID of an outer ID; ok is false when id names no
// partition of a topic with p partitions (a foreign or mistyped ID, which holds nothing).
func SplitID(id string, p int) (i int, inner string, ok bool) {
	head, inner, found := strings.Cut(id, ":")
	if !found || inner == "" || head == "" || len(head) > 4 {
		return 0, "", false
	}
	i, err := strconv.Atoi(head)
	if err != nil || i < 0 || i >= p || strconv.Itoa(i) != head {
		return 0, "", false
	}
	return i, inner, true
}

// byPartition splits items by the partition their ID names, keeping their order within each;
// items naming none go to rest.
func byPartition[T any](items []T, p int, id func(T) string, setID func(*T, string)) (parts map[int][]T, rest []T) {
	parts = map[int][]T{}
	for _, it := range items {
		i, inner, ok := SplitID(id(it), p)
		if !ok {
			rest = append(rest, it)
			continue
		}
		setID(&it, inner)
		parts[i] = append(parts[i], it)
	}
	return parts, rest
}
