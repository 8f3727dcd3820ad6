package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/web"
)

// requireStaff stands for the application's own authentication: a session check, an SSO
// proxy's header, mutual TLS.
func requireStaff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Staff") != "yes" {
			http.Error(w, "staff only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Mount the dashboard at /ops/relq/ of an application's own server, behind its own
// authentication. The dashboard links relatively, so it needs no setting for the prefix;
// http.StripPrefix hands it paths from its own root.
func Example() {
	opt, _ := redis.ParseURL(redistest.SharedURL()) // in an application: its Redis
	client := redis.NewClient(opt)
	defer client.Close()
	backend, err := list.New(client, list.Options{Prefix: "example-" + time.Now().Format("150405.000000")})
	if err != nil {
		panic(err)
	}
	dashboard, err := web.New(web.Options{
		Backends: []web.Backend{{Name: "list", Admin: backend}},
		ReadOnly: true, // look, never change
	})
	if err != nil {
		panic(err)
	}
	defer dashboard.Close()

	mux := http.NewServeMux()
	mux.Handle("/ops/relq/", requireStaff(http.StripPrefix("/ops/relq", dashboard)))

	// The application serves mux; here one request goes through it.
	req := httptest.NewRequest(http.MethodGet, "/ops/relq/", nil)
	req.Header.Set("X-Staff", "yes")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), "<h1>Overview</h1>"))
	// Output: 200 true
}
