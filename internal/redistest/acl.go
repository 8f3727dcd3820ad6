package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// User is a Redis ACL user for least-privilege tests. Rules are ACL SETUSER rules
// ("~{relq:*", "+evalsha", "-@all", ...), applied after "reset on >Password", so the user
// has exactly the rules given and nothing the default user template would add.
type User struct {
	Name     string
	Password string
	Rules    []string
}

// rules returns the user's full rule list.
func (u User) rules() []string {
	return append([]string{"reset", "on", ">" + u.Password}, u.Rules...)
}

// ServerArgs returns redis-server arguments (for Options.Args) that create the user at
// start-up, so it survives Stop, Kill and Start, unlike a user made with AddUser.
func (u User) ServerArgs() []string {
	// redis-server joins the words after --user into one config line, as a file would hold it.
	return append([]string{"--user", u.Name}, u.rules()...)
}

// AddUser creates (or replaces) the user with ACL SETUSER, as the default user. The user
// lives in the server's memory: a restart forgets it (see ServerArgs).
func (s *Server) AddUser(t testing.TB, u User) {
	t.Helper()
	args := []any{"ACL", "SETUSER", u.Name}
	for _, r := range u.rules() {
		args = append(args, r)
	}
	if err := s.Client(t).Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("redistest: ACL SETUSER %s: %v", u.Name, err)
	}
}

// ClientAs returns a client that authenticates as u, closed when t ends.
func (s *Server) ClientAs(t testing.TB, u User) *redis.Client {
	t.Helper()
	opt := s.options(t)
	opt.Username, opt.Password = u.Name, u.Password
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
