package web

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/payload"
)

// messageView is the message page.
type messageView struct {
	Backend string
	backend.MessageInfo
	Kind     payload.Kind
	Body     string
	AsHex    bool
	Metadata []kv
	Size     int
}

type kv struct{ Key, Value string }

func (h *Handler) message(w http.ResponseWriter, r *http.Request) (out, error) {
	b, a, err := h.admin(r)
	if err != nil {
		return out{}, err
	}
	topic, group, id := r.FormValue("t"), r.FormValue("g"), r.FormValue("id")
	m, err := a.Message(r.Context(), &backend.MessageParams{Topic: topic, Group: group, ID: id})
	if errors.Is(err, backend.ErrMessageNotFound) {
		// A link to a message that was acked, purged or deleted since: say so plainly.
		return out{}, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf(
			"%s / %s holds no message %s (any more): acked, purged or deleted, if it was there.", topic, group, id)}
	}
	if err != nil {
		return out{}, err
	}
	v := &messageView{Backend: b, MessageInfo: m, AsHex: r.FormValue("as") == "hex"}
	p := m.Envelope.Payload
	if m.Err != nil {
		p = m.Raw
	}
	v.Size = len(p)
	v.Kind, v.Body = payload.Format(p)
	if v.AsHex && v.Kind != payload.Binary && len(p) > 0 {
		v.Kind, v.Body = payload.Binary, payload.HexDump(p)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Envelope.Metadata)) {
		v.Metadata = append(v.Metadata, kv{k, m.Envelope.Metadata[k]})
	}
	return out{page: "message", title: "Message " + m.ID, crumbs: groupCrumbs(b, m.Topic, m.Group), data: v}, nil
}
