package cli

// memAdmin: an in-memory backend.Admin, for tests of what the Admin verbs print and ask
// (tables, widths, paging, confirmations, error messages) without Redis. It models no
// backend: no claims, leases or clocks, only the state that the listings read. What the
// verbs do to real data is tested against the real backends in admin_verbs_test.go.

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relq/relq/backend"
)

type memAdmin struct {
	backend.Backend // nil: the verbs must not use the data plane

	name   string
	mu     sync.Mutex
	topics map[string]*memTopic
}

type memTopic struct {
	backlog int64
	dropped int64 // TopicInfo.BacklogDropped
	groups  map[string]*memGroup
}

type memGroup struct {
	info backend.GroupInfo
	msgs []backend.MessageInfo // in listing order within each state
	// reregistered and reregisteredAt are Stats' Counters.Reregistered and ReregisteredAt.
	reregistered   int64
	reregisteredAt time.Time
}

var _ backend.Admin = (*memAdmin)(nil)
var _ finder = (*memAdmin)(nil)

func newMemAdmin(name string) *memAdmin {
	return &memAdmin{name: name, topics: map[string]*memTopic{}}
}

// add puts messages into group of topic, registering both.
func (a *memAdmin) add(topic, group string, msgs ...backend.MessageInfo) *memAdmin {
	t := a.topics[topic]
	if t == nil {
		t = &memTopic{groups: map[string]*memGroup{}}
		a.topics[topic] = t
	}
	if group == "" {
		return a
	}
	g := t.groups[group]
	if g == nil {
		g = &memGroup{info: backend.GroupInfo{Topic: topic, Name: group}}
		t.groups[group] = g
	}
	for _, m := range msgs {
		m.Topic, m.Group = topic, group
		g.msgs = append(g.msgs, m)
	}
	return a
}

func (a *memAdmin) group(topic, group string) (*memGroup, error) {
	t := a.topics[topic]
	if t == nil {
		return nil, backend.ErrTopicNotFound
	}
	g := t.groups[group]
	if g == nil {
		return nil, backend.ErrGroupNotFound
	}
	return g, nil
}

func (a *memAdmin) Name() string { return a.name }

func (a *memAdmin) TopicNames(context.Context) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var names []string
	for name := range a.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

func (a *memAdmin) HasTopic(_ context.Context, topic string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.topics[topic] != nil, nil
}

func (a *memAdmin) GroupNames(_ context.Context, topic string) ([]string, error) {
	info, err := a.Topic(context.Background(), topic)
	return info.Groups, err
}

func (a *memAdmin) ListTopics(ctx context.Context) ([]backend.TopicInfo, error) {
	names, _ := a.TopicNames(ctx)
	infos := make([]backend.TopicInfo, len(names))
	for i, n := range names {
		infos[i], _ = a.Topic(ctx, n)
	}
	return infos, nil
}

func (a *memAdmin) Topic(_ context.Context, topic string) (backend.TopicInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.topics[topic]
	if t == nil {
		return backend.TopicInfo{}, backend.ErrTopicNotFound
	}
	info := backend.TopicInfo{Name: topic, Backlog: t.backlog, BacklogDropped: t.dropped}
	for g := range t.groups {
		info.Groups = append(info.Groups, g)
	}
	slices.Sort(info.Groups)
	return info, nil
}

func (a *memAdmin) ListGroups(ctx context.Context, topic string) ([]backend.GroupInfo, error) {
	info, err := a.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []backend.GroupInfo
	for _, g := range info.Groups {
		out = append(out, a.topics[topic].groups[g].info)
	}
	return out, nil
}

func (a *memAdmin) Stats(_ context.Context, p *backend.StatsParams) (backend.Stats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, err := a.group(p.Topic, p.Group)
	if err != nil {
		return backend.Stats{}, err
	}
	st := backend.Stats{Topic: p.Topic, Group: p.Group, Paused: g.info.Paused, ReregisteredAt: g.reregisteredAt,
		Counters: backend.Counters{Reregistered: g.reregistered}}
	for _, m := range g.msgs {
		switch m.State {
		case backend.StateReady:
			st.Ready++
		case backend.StateDelayed:
			st.Delayed++
		case backend.StatePending:
			st.Pending++
		case backend.StateDead:
			st.Dead++
		}
	}
	return st, nil
}

// Messages pages by position among the state's messages: the cursor is "at:<index>".
func (a *memAdmin) Messages(_ context.Context, p *backend.MessagesParams) (backend.MessagePage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, err := a.group(p.Topic, p.Group)
	if err != nil {
		return backend.MessagePage{}, err
	}
	var in []backend.MessageInfo
	for _, m := range g.msgs {
		if m.State == p.State {
			in = append(in, m)
		}
	}
	from := 0
	if p.Cursor != "" {
		n, ok := strings.CutPrefix(p.Cursor, "at:")
		if from, err = strconv.Atoi(n); !ok || err != nil || from < 0 || from > len(in) {
			return backend.MessagePage{}, backend.ErrBadCursor
		}
	}
	count := p.Count
	if count == 0 {
		count = 100
	}
	to := min(from+count, len(in))
	page := backend.MessagePage{Messages: in[from:to]}
	if to < len(in) {
		page.Next = "at:" + strconv.Itoa(to)
	}
	return page, nil
}

func (a *memAdmin) find(p *backend.MessageParams) (*memGroup, int, error) {
	g, err := a.group(p.Topic, p.Group)
	if err != nil {
		return nil, 0, err
	}
	i := slices.IndexFunc(g.msgs, func(m backend.MessageInfo) bool { return m.ID == p.ID })
	if i < 0 {
		return nil, 0, backend.ErrMessageNotFound
	}
	return g, i, nil
}

func (a *memAdmin) Message(_ context.Context, p *backend.MessageParams) (backend.MessageInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, i, err := a.find(p)
	if err != nil {
		return backend.MessageInfo{}, err
	}
	return g.msgs[i], nil
}

func (a *memAdmin) DeleteMessage(_ context.Context, p *backend.MessageParams) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, i, err := a.find(p)
	if err == nil {
		g.msgs = slices.Delete(g.msgs, i, i+1)
	}
	return err
}

func (a *memAdmin) RunMessage(_ context.Context, p *backend.MessageParams) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, i, err := a.find(p)
	switch {
	case err != nil:
		return err
	case g.msgs[i].State != backend.StateDelayed:
		return backend.ErrNotDelayed
	}
	g.msgs[i].State = backend.StateReady
	return nil
}

func (a *memAdmin) DeadLetters(context.Context, *backend.DeadLettersParams) ([]backend.DeadLetter, error) {
	panic("memAdmin: DeadLetters is not modelled")
}

func (a *memAdmin) RequeueDeadLetters(context.Context, *backend.RequeueParams) (int, error) {
	panic("memAdmin: RequeueDeadLetters is not modelled")
}

func (a *memAdmin) PurgeDeadLetters(context.Context, *backend.PurgeParams) (int, error) {
	panic("memAdmin: PurgeDeadLetters is not modelled")
}

func (a *memAdmin) setPaused(topic, group string, paused bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, err := a.group(topic, group)
	if err == nil {
		g.info.Paused = paused
	}
	return err
}

func (a *memAdmin) PauseGroup(_ context.Context, topic, group string) error {
	return a.setPaused(topic, group, true)
}

func (a *memAdmin) ResumeGroup(_ context.Context, topic, group string) error {
	return a.setPaused(topic, group, false)
}

// DeleteGroup deletes the topic with its last group when it has no backlog (decision 2).
func (a *memAdmin) DeleteGroup(_ context.Context, topic, group string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.group(topic, group); err != nil {
		return err
	}
	t := a.topics[topic]
	delete(t.groups, group)
	if len(t.groups) == 0 && t.backlog == 0 {
		delete(a.topics, topic)
	}
	return nil
}

func (a *memAdmin) DeleteTopic(_ context.Context, topic string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.topics[topic] == nil {
		return backend.ErrTopicNotFound
	}
	delete(a.topics, topic)
	return nil
}

// memRun is how a test runs relq on memAdmins.
type memRun struct {
	admins     []*memAdmin
	in         string // standard input
	terminalIn bool   // standard input is a terminal
	terminal   bool   // standard output is a terminal
	width      int    // Env.Width's answer
}

// run runs relq with args on the memAdmins and returns the exit code, stdout and stderr.
func (r memRun) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{
		Out: &out, Err: &errOut, In: strings.NewReader(r.in),
		Getenv:       func(string) string { return "" },
		IsTerminal:   func(io.Writer) bool { return r.terminal },
		InIsTerminal: func(io.Reader) bool { return r.terminalIn },
		Width:        func(io.Writer) int { return r.width },
		dial: func(_ context.Context, o *connOptions) (*session, error) {
			s := &session{where: "redis://mem:6379 (test)", prefix: o.prefix, user: "default"}
			for _, a := range r.admins {
				if o.backend == "auto" || o.backend == a.name {
					s.backends = append(s.backends, &source{name: a.name, finder: a})
				}
			}
			return s, nil
		},
	}
	code := Main(context.Background(), args, env)
	t.Logf("relq %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}
