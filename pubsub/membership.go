package pubsub

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/relq/relq/backend"
)

// A subscription registers its group as it starts (Subscribe, SubscribeInitialize). A group
// deleted with Admin.DeleteGroup or DeleteTopic must stay deleted: the delete leaves a
// tombstone, and a running subscription whose claims find it stops (ErrGroupDeleted). A
// registration that vanished without one (a Redis restarted empty, a failover to a replica
// that had not synced, FLUSHALL) is registered again, loudly (regain.go).
//
// An ephemeral group's subscription is a member of the group for as long as it runs: it
// joins as it starts, renews (Join with Renew, which never registers the group) every
// EphemeralTTL/3, and leaves once it stopped, after its acks and releases were sent, so the
// last member's leave deletes a group that holds nothing of value any more.

// register registers the group on topic for consumer: EnsureGroup for a durable group, Join
// for an ephemeral one. It retries Redis failures with capped backoff, and gives up on a
// permanent error, ctx cancellation or Close.
func (s *Subscriber) register(ctx context.Context, topic, consumer string) error {
	what := "registering group on topic " + topic
	call := func() error {
		return s.backend.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: s.config.Group, FromOldest: s.config.FromOldest})
	}
	if s.ephemeral != nil {
		what = "joining ephemeral group on topic " + topic
		call = func() error {
			return s.ephemeral.Join(ctx, &backend.JoinParams{Topic: topic, Group: s.config.Group, Consumer: consumer, TTL: s.config.EphemeralTTL})
		}
	}
	r := newRetrier(what, s.config, s.logger)
	for {
		err := call()
		if err == nil {
			r.ok()
			s.checkEviction()
			return nil
		}
		if permanent(err) {
			return err
		}
		wait := r.failed(err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return backend.ErrClosed
		case <-time.After(wait):
		}
	}
}

// leave ends an ephemeral membership that no subscription renews (SubscribeInitialize's, or
// a subscription's that did not start), with one call bounded by CloseTimeout. If it fails,
// the membership expires after EphemeralTTL.
func (s *Subscriber) leave(topic, consumer string) {
	if s.ephemeral == nil || s.config.CloseTimeout <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.config.CloseTimeout)
	defer cancel()
	err := s.ephemeral.Leave(ctx, &backend.LeaveParams{Topic: topic, Group: s.config.Group, Consumer: consumer})
	if err != nil && !groupGone(err) {
		s.logger.Info("relq: could not leave the ephemeral group; the membership expires after EphemeralTTL",
			watermill.LogFields{"topic": topic, "member": consumer, "error": err.Error()})
	}
}

// renew is the membership goroutine of an ephemeral group's subscription: it renews the
// membership every EphemeralTTL/3 until the stop leaves the group, retrying failures sooner
// (with backoff, at most a renewal interval apart) since the membership is running out.
func (s *subscription) renew() {
	defer s.memberWG.Done()
	interval := s.config.renewInterval()
	r := newRetrier("renewing the ephemeral group's membership", s.config, s.logger)
	p := &backend.JoinParams{Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer, TTL: s.config.EphemeralTTL, Renew: true}
	wait := interval
	for sleep(wait, s.leaving) {
		err := s.ephemeral.Join(s.hard, p)
		switch {
		case err == nil:
			r.ok()
			wait = interval
		case errors.Is(err, backend.ErrGroupLost):
			if !s.regain(err) {
				return
			}
			r.ok()
			wait = interval
		case groupGone(err) || errors.Is(err, backend.ErrNotEphemeral):
			s.groupDeleted(err)
			return
		case s.hard.Err() != nil:
			return
		default:
			wait = min(r.failed(err), interval)
		}
	}
}

// leaveGroup stops renewing an ephemeral group's membership and leaves the group, retrying
// until hard ends (CloseTimeout after the stop began); then the membership just expires.
func (s *subscription) leaveGroup() {
	if s.ephemeral == nil {
		return
	}
	close(s.leaving)
	s.memberWG.Wait() // no renewal may follow the Leave: it would join again
	if s.isGone() {
		return
	}
	r := newRetrier("leaving the ephemeral group", s.config, s.logger)
	p := &backend.LeaveParams{Topic: s.topic, Group: s.config.Group, Consumer: s.config.Consumer}
	for {
		err := s.ephemeral.Leave(s.hard, p)
		if err == nil || groupGone(err) {
			r.ok()
			return
		}
		if permanent(err) || !sleep(r.failed(err), s.hard.Done()) {
			s.logger.Info("relq: could not leave the ephemeral group; the membership expires after EphemeralTTL",
				watermill.LogFields{"error": err.Error()})
			return
		}
	}
}

// groupDeleted stops the subscription, once, because its group is gone: a Claim (or a
// renewal) failed with ErrGroupDeleted. The stop then runs as for a cancelled ctx; the
// releases and acks it sends are stale no-ops on a deleted group.
func (s *subscription) groupDeleted(err error) {
	s.goneOnce.Do(func() {
		s.logger.Error("relq: the subscription's group was deleted; the subscription stops", err, nil)
		close(s.gone)
	})
}

func (s *subscription) isGone() bool {
	select {
	case <-s.gone:
		return true
	default:
		return false
	}
}

// groupGone reports an error saying the group is not registered.
func groupGone(err error) bool {
	return errors.Is(err, backend.ErrGroupDeleted) || errors.Is(err, backend.ErrGroupNotFound)
}
