package faults

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
)

// aclHarness makes the conformance Harness of one test of TestACLConformance, under a key
// prefix of its own on server. Its Backend and Peer run as a user with the backend's
// data-plane rule (aclRules), as an application's publishers and subscribers would, ephemeral
// groups included; its Admin runs as an operator's user (aclAdminRules), as the relq CLI or a
// dashboard would. Faults and Keys stand for a foreign writer and for the test's own look at
// Redis, so they use a privileged client. A test that stops Redis gets a server of its own
// that creates both users at start-up, so they survive the restart.
//
// The Harness is Complete, as adaptertest's: every lifecycle case runs under these users, and
// one that would skip for want of something fails instead.
func aclHarness(t *testing.T, bc backendCase, server *redistest.Server, opts conformance.Options) conformance.Harness {
	t.Helper()
	prefix := redistest.Prefix(t)
	app := aclUser(aclRules(t, bc.name, prefix))
	operator := aclUser(aclAdminRules(t, bc.name, prefix))
	srv := server
	if opts.Private {
		srv = redistest.Start(t, redistest.Options{AOF: true, Args: slices.Concat(app.ServerArgs(), operator.ServerArgs())})
	} else {
		server.AddUser(t, app)
		server.AddUser(t, operator)
	}
	privileged := srv.Client(t)

	b, _ := newConformanceBackend(t, bc, srv.ClientAs(t, app), prefix, opts)
	ab, _ := newConformanceBackend(t, bc, srv.ClientAs(t, operator), prefix, opts)
	admin, ok := ab.(backend.Admin)
	require.True(t, ok, "the %s backend implements no backend.Admin", bc.name)
	_, injector := newConformanceBackend(t, bc, privileged, prefix, opts)
	topicKeys := adaptertest.TopicKeys(privileged, func(topic string) string { return keys.Tag(prefix, topic) }, nil)
	h := conformance.Harness{
		Backend: b,
		Faults:  conformanceFaults(t, injector),
		Admin:   admin,
		Keys:    topicKeys,
		Forget:  adaptertest.Forget(privileged, topicKeys),
		Peer: func() (backend.Backend, error) {
			peer, _ := newConformanceBackend(t, bc, srv.ClientAs(t, app), prefix, opts)
			return peer, nil
		},
		Complete: true,
	}
	if opts.Private {
		h.Outage = srv.Outage
	}
	return h
}
