package streams

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

var _ backend.Admin = (*Backend)(nil)

// ListTopics lists the topics under Options.Prefix that have a group or a backlog, sorted by
// name, found with SCAN as Topics finds them, each described by one topic.lua call.
func (b *Backend) ListTopics(ctx context.Context) ([]backend.TopicInfo, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	scan := b.topicScan()
	scan.Keep = nil // each is read below
	names, err := backendkit.ScanTopics(ctx, b.client, scan)
	if err != nil {
		return nil, err
	}
	out := make([]backend.TopicInfo, 0, len(names))
	for _, name := range names {
		info, err := b.topicInfo(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(info.groups) > 0 || info.backlog > 0 {
			out = append(out, info.asInfo())
		}
	}
	return out, nil
}

// Topic describes one topic: the groups of its stream and, while it has none, its backlog.
// backend.ErrTopicNotFound when it has neither.
func (b *Backend) Topic(ctx context.Context, topic string) (backend.TopicInfo, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return backend.TopicInfo{}, err
	}
	info, err := b.topicInfo(ctx, topic)
	if err != nil {
		return backend.TopicInfo{}, err
	}
	if len(info.groups) == 0 && info.backlog == 0 {
		return backend.TopicInfo{}, fmt.Errorf("streams: topic %q: %w", topic, backend.ErrTopicNotFound)
	}
	return info.asInfo(), nil
}

// ListGroups lists the groups of the topic's stream, sorted by name, with their flags:
// relq's and any other program's (which are durable and never paused).
func (b *Backend) ListGroups(ctx context.Context, topic string) ([]backend.GroupInfo, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return nil, err
	}
	info, err := b.topicInfo(ctx, topic)
	if err != nil {
		return nil, err
	}
	return info.groups, nil
}

// PauseGroup adds the group to the topic's paused SET: its claims return nothing (claim.lua
// looks first, so no entry is read on its behalf) while publishes still reach it, and leases
// already taken run their course. Idempotent. backend.ErrGroupNotFound when not registered.
func (b *Backend) PauseGroup(ctx context.Context, topic, group string) error {
	return b.pause(ctx, topic, group, "1")
}

// ResumeGroup undoes PauseGroup. Idempotent. backend.ErrGroupNotFound when not registered.
func (b *Backend) ResumeGroup(ctx context.Context, topic, group string) error {
	return b.pause(ctx, topic, group, "0")
}

func (b *Backend) pause(ctx context.Context, topic, group, flag string) error {
	if err := b.check(ctx, "topic", topic, "group", group); err != nil {
		return err
	}
	n, err := pauseScript.Run(ctx, b.client, b.topicKeys(topic).all(), group, flag).Int64()
	if err != nil {
		return backendkit.RedisFull(err)
	}
	if n == 0 {
		return fmt.Errorf("streams: group %q of topic %q: %w", group, topic, backend.ErrGroupNotFound)
	}
	return nil
}

// topicDesc is topic.lua's reply.
type topicDesc struct {
	name    string
	backlog int64
	dropped int64
	groups  []backend.GroupInfo
}

func (d topicDesc) asInfo() backend.TopicInfo {
	info := backend.TopicInfo{Name: d.name, Groups: make([]string, len(d.groups)), Backlog: d.backlog, BacklogDropped: d.dropped}
	for i, g := range d.groups {
		info.Groups[i] = g.Name
	}
	return info
}

// topicInfo runs topic.lua: the topic's groups with their flags, and its backlog.
func (b *Backend) topicInfo(ctx context.Context, topic string) (topicDesc, error) {
	res, err := topicScript.Run(ctx, b.client, b.topicKeys(topic).all()).Slice()
	if err != nil {
		return topicDesc{}, err
	}
	d := topicDesc{name: topic, backlog: backendkit.Int(res[0]), dropped: backendkit.Int(res[1]), groups: []backend.GroupInfo{}}
	for i := 2; i+2 < len(res); i += 3 {
		g := backend.GroupInfo{Topic: topic, Paused: backendkit.Int(res[i+1]) == 1}
		g.Name, _ = res[i].(string)
		if exp := backendkit.Int(res[i+2]); exp >= 0 {
			g.Ephemeral, g.Expires = true, time.UnixMilli(exp)
		}
		d.groups = append(d.groups, g)
	}
	slices.SortFunc(d.groups, func(a, b backend.GroupInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return d, nil
}
