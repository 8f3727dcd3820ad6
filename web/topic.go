package web

import (
	"net/http"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/partition"
)

// groupsMax bounds the groups a topic page reads the stats of.
const groupsMax = 100

// topicView is the topic page.
type topicView struct {
	Backend string
	Info    backend.TopicInfo
	Groups  []backend.Stats
	More    int
	// Partitions is the topic's partition count: 1 for a topic created without partitions.
	Partitions int
}

func (h *Handler) topic(w http.ResponseWriter, r *http.Request) (out, error) {
	b, a, err := h.admin(r)
	if err != nil {
		return out{}, err
	}
	info, err := a.Topic(r.Context(), r.FormValue("t"))
	if err != nil {
		return out{}, err
	}
	v := &topicView{Backend: b, Info: info, Partitions: 1}
	if be, ok := a.(backend.Backend); ok {
		if v.Partitions, err = partition.Count(r.Context(), be, info.Name); err != nil {
			return out{}, err
		}
	}
	for i, g := range info.Groups {
		if i == groupsMax {
			v.More = len(info.Groups) - i
			break
		}
		st, err := a.Stats(r.Context(), &backend.StatsParams{Topic: info.Name, Group: g})
		if err != nil {
			return out{}, err
		}
		v.Groups = append(v.Groups, st)
	}
	return out{page: "topic", title: "Topic " + info.Name, crumbs: topicCrumbs(b, info.Name), data: v}, nil
}
