package benchmarks

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// Colours of the targets in the chart, in Targets order; the baseline is grey.
var barColours = map[string]string{
	"list": "#4e79a7", "zset": "#f28e2b", "streams": "#59a14f", BaselineName: "#9c9c9c",
}

// WriteSVG draws the throughput and latency figures as horizontal bar charts, one panel per
// figure, each bar scaled to the panel's largest value.
func (r *Report) WriteSVG(w io.Writer) error {
	type panel struct {
		title string
		unit  string
		get   func(*TargetReport) (float64, bool)
	}
	var panels []panel
	for _, rw := range rows(r) {
		if rw.unit == "msg/s" || strings.HasPrefix(rw.label, "pickup latency p") || strings.HasPrefix(rw.label, "delay lateness p99") {
			title := rw.label
			if rw.unit == "ms" {
				title += " (lower is better)"
			}
			panels = append(panels, panel{title: title, unit: rw.unit, get: rw.get})
		}
	}
	const (
		cols, panelW, barH, gap, labelW, valueW = 2, 440, 18, 4, 90, 130
	)
	panelH := 30 + len(r.Targets)*(barH+gap) + 10
	rowsN := (len(panels) + cols - 1) / cols
	width, height := cols*panelW+20, 60+rowsN*panelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">relq bench: relq backends vs watermill-redisstream (grey)</text>`+"\n")
	sub := fmt.Sprintf("%d CPUs, payload %d bytes", r.CPUs, r.Config.PayloadBytes)
	if rounds := max(r.Config.Rounds, len(r.RoundOrders)); rounds > 1 {
		sub += fmt.Sprintf("; msg/s: medians of %d interleaved rounds", rounds)
	}
	if r.Reference.LPUSHPerSec != nil {
		sub += fmt.Sprintf("; redis-benchmark LPUSH -P 16: %s/s", number(*r.Reference.LPUSHPerSec))
	}
	fmt.Fprintf(&b, `<text x="10" y="42" fill="#555">%s</text>`+"\n", html.EscapeString(sub))
	for i, p := range panels {
		x0 := 10 + (i%cols)*panelW
		y0 := 60 + (i/cols)*panelH
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s (%s)</text>`+"\n", x0, y0+16, html.EscapeString(p.title), p.unit)
		top := 0.0
		for j := range r.Targets {
			if v, ok := p.get(&r.Targets[j]); ok && v > top {
				top = v
			}
		}
		barMax := float64(panelW - labelW - valueW)
		for j := range r.Targets {
			t := &r.Targets[j]
			y := y0 + 26 + j*(barH+gap)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", x0+labelW-6, y+barH-5, t.Name)
			v, ok := p.get(t)
			if !ok {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#888">n/a</text>`+"\n", x0+labelW, y+barH-5)
				continue
			}
			wBar := 0.0
			if top > 0 && v > 0 {
				wBar = barMax * v / top
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0+labelW, y, wBar, barH, barColours[t.Name])
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(x0+labelW)+wBar+4, y+barH-5, number(v))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
