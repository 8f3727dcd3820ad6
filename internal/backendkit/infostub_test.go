package backendkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// infoStub is a TCP listener that answers INFO as a test scripts it, for the replies a real
// server gives only in states a test cannot easily create (LOADING while it reads a large
// dataset, an INFO that never comes back). It speaks just enough RESP for a go-redis client:
// it refuses HELLO (the client falls back to RESP2) and answers +OK to other set-up commands.
// It keeps no data and knows no other command.
type infoStub struct {
	ln    net.Listener
	infos atomic.Int32 // INFO commands received
	// reply gives the raw RESP reply to the nth INFO (1 on the first); "" answers nothing
	// until the stub closes.
	reply func(n int) string

	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// startInfoStub listens on a free loopback port and closes, with its connections, when t ends.
func startInfoStub(t *testing.T, reply func(n int) string) *infoStub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &infoStub{ln: ln, reply: reply, closed: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// client is a go-redis client of the stub with no read timeout: a stalled INFO stays stalled
// until the stub closes, so only the caller's own context can end a wait for it.
func (s *infoStub) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr: s.ln.Addr().String(), ReadTimeout: -1, MaxRetries: -1, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// close stops the stub, failing the INFOs it holds; it may be called more than once.
func (s *infoStub) close() {
	s.once.Do(func() {
		close(s.closed)
		_ = s.ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

func (s *infoStub) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *infoStub) serve(c net.Conn) {
	defer s.wg.Done()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		var out string
		switch strings.ToUpper(cmd) {
		case "HELLO":
			out = "-ERR unknown command 'HELLO'\r\n"
		case "INFO":
			out = s.reply(int(s.infos.Add(1)))
			if out == "" {
				<-s.closed
				return
			}
		default:
			out = "+OK\r\n"
		}
		if _, err := io.WriteString(c, out); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings and returns its first element.
func readCommand(r *bufio.Reader) (string, error) {
	n, err := readHeader(r, '*')
	if err != nil {
		return "", err
	}
	var name string
	for i := range n {
		size, err := readHeader(r, '$')
		if err != nil {
			return "", err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		if i == 0 {
			name = string(b[:size])
		}
	}
	return name, nil
}

func readHeader(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 || line[0] != kind {
		return 0, fmt.Errorf("infostub: unexpected %q", line)
	}
	return strconv.Atoi(strings.TrimSpace(line[1:]))
}

// bulk is s as a RESP bulk string: INFO's reply.
func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
