package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCost is what Redis spent on a measured phase, per message of it. It is read from
// server-wide counters (INFO cpu and commandstats), so it counts every client of the server:
// run it on a server nobody else uses.
type RedisCost struct {
	// Messages is what the figures are divided by.
	Messages int `json:"messages"`
	// CPUMicrosPerMessage is the growth of used_cpu_sys + used_cpu_user (the whole process,
	// background threads included), in µs per message, minus one measuring INFO call.
	CPUMicrosPerMessage float64 `json:"cpu_us_per_msg"`
	// MainThreadCPUMicrosPerMessage is the same for the main thread only (the one that runs
	// commands and scripts), where the server reports it (Redis 7); else nil.
	MainThreadCPUMicrosPerMessage *float64 `json:"main_thread_cpu_us_per_msg,omitempty"`
	// CommandsPerMessage sums the calls of every command (commandstats): a script's EVALSHA
	// counts, and so does every command the script runs. The measuring INFO calls do not.
	CommandsPerMessage float64 `json:"commands_per_msg"`
	// ByCommand splits CommandsPerMessage by command name ("evalsha", "xadd",
	// "client|setinfo", ...), with the time Redis spent in each.
	ByCommand map[string]CommandCost `json:"by_command"`
}

// CommandCost is one command's share of a RedisCost, per message.
type CommandCost struct {
	Calls float64 `json:"calls_per_msg"`
	// Micros is commandstats' usec per message: time inside the command. A script's
	// EVALSHA time includes the commands it runs, which also count under their own names.
	Micros float64 `json:"usec_per_msg"`
}

// serverCounters is one reading of INFO all.
type serverCounters struct {
	cpuMicros     int64
	mainCPUMicros int64 // -1 when the server does not report it
	calls         map[string]int64
	usec          map[string]int64
	// lazyfreePending is INFO memory lazyfree_pending_objects.
	lazyfreePending int64
}

// readCounters reads INFO all (one call, so Redis 6.2, which takes one section, works too).
func readCounters(ctx context.Context, c *redis.Client) (serverCounters, error) {
	info, err := c.Info(ctx, "all").Result()
	if err != nil {
		return serverCounters{}, err
	}
	return parseCounters(info)
}

// parseCounters reads the cpu and commandstats fields of an INFO reply.
func parseCounters(info string) (serverCounters, error) {
	s := serverCounters{mainCPUMicros: -1, calls: map[string]int64{}, usec: map[string]int64{}}
	var cpu = map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			for _, field := range strings.Split(v, ",") {
				fk, fv, _ := strings.Cut(field, "=")
				n, err := strconv.ParseInt(fv, 10, 64)
				switch {
				case fk != "calls" && fk != "usec":
				case err != nil:
					return s, fmt.Errorf("INFO commandstats %s: %w", k, err)
				case fk == "calls":
					s.calls[name] = n
				default:
					s.usec[name] = n
				}
			}
			continue
		}
		switch k {
		case "lazyfree_pending_objects":
			s.lazyfreePending, _ = strconv.ParseInt(v, 10, 64)
		case "used_cpu_sys", "used_cpu_user", "used_cpu_sys_main_thread", "used_cpu_user_main_thread":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return s, fmt.Errorf("INFO cpu %s: %w", k, err)
			}
			cpu[k] = int64(math.Round(f * 1e6))
		}
	}
	sys, okSys := cpu["used_cpu_sys"]
	user, okUser := cpu["used_cpu_user"]
	if !okSys || !okUser {
		return s, fmt.Errorf("INFO has no used_cpu_sys and used_cpu_user")
	}
	s.cpuMicros = sys + user
	if ms, ok := cpu["used_cpu_sys_main_thread"]; ok {
		if mu, ok := cpu["used_cpu_user_main_thread"]; ok {
			s.mainCPUMicros = ms + mu
		}
	}
	return s, nil
}

// costMeter reads the server's counters before a phase and turns their growth into a
// RedisCost after it.
type costMeter struct {
	client *redis.Client
	before serverCounters
	// infoMicros is what one measuring INFO call costs Redis: subtracted from the CPU growth,
	// which holds about one (the end of the first reading and the start of the last).
	infoMicros int64
}

// settleTime is how long a cost phase waits, once no lazy free is pending, for the rest of
// the last measurement's clean-up (closing connections) to finish.
const settleTime = 100 * time.Millisecond

// settle waits until the lazy frees of earlier measurements' keys are done (UNLINK frees
// big values on a background thread, whose CPU counts and which competes for the cores), at
// most a minute, and then settleTime.
func settle(ctx context.Context, c *redis.Client) error {
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := readCounters(ctx, c)
		if err != nil {
			return err
		}
		if s.lazyfreePending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(settleTime)
	return nil
}

// startCost settles (settle) and takes the "before" reading. It reads twice: the growth of
// cmdstat_info between the two is the cost of one INFO all.
func startCost(ctx context.Context, c *redis.Client) (*costMeter, error) {
	if err := settle(ctx, c); err != nil {
		return nil, err
	}
	first, err := readCounters(ctx, c)
	if err != nil {
		return nil, err
	}
	second, err := readCounters(ctx, c)
	if err != nil {
		return nil, err
	}
	return &costMeter{client: c, before: second, infoMicros: max(second.usec["info"]-first.usec["info"], 0)}, nil
}

// stop takes the "after" reading and returns the growth per message, without the measuring
// calls: the "before" INFO (counted once it ran; the "after" one is not counted in its own
// reading) and about one INFO's CPU.
func (m *costMeter) stop(ctx context.Context, messages int) (RedisCost, error) {
	after, err := readCounters(ctx, m.client)
	if err != nil {
		return RedisCost{}, err
	}
	return m.before.costTo(after, messages, m.infoMicros), nil
}

// costTo is the growth from s to after per message, with one measuring INFO call taken out.
func (s serverCounters) costTo(after serverCounters, messages int, infoMicros int64) RedisCost {
	n := float64(max(messages, 1))
	cost := RedisCost{Messages: messages, ByCommand: map[string]CommandCost{}}
	var total int64
	for name, calls := range after.calls {
		d := calls - s.calls[name]
		usec := after.usec[name] - s.usec[name]
		if name == "info" {
			d--
			usec -= infoMicros
		}
		if d <= 0 {
			continue
		}
		total += d
		cost.ByCommand[name] = CommandCost{Calls: float64(d) / n, Micros: float64(max(usec, 0)) / n}
	}
	cost.CommandsPerMessage = float64(total) / n
	cost.CPUMicrosPerMessage = float64(max(after.cpuMicros-s.cpuMicros-infoMicros, 0)) / n
	if s.mainCPUMicros >= 0 && after.mainCPUMicros >= 0 {
		v := float64(max(after.mainCPUMicros-s.mainCPUMicros-infoMicros, 0)) / n
		cost.MainThreadCPUMicrosPerMessage = &v
	}
	return cost
}
