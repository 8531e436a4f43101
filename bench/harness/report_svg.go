package main

import (
	"fmt"
	"math"
	"strings"
)

// svg draws throughput (records/s, log) against p50 latency (ms, log): one
// line per system through its W1, W2 64 and W2 1,000 points, and its W3
// (16 in flight) point as a square; paros's "64 journals" W2 variant as a
// dashed line.
func (r *report) svg() string {
	const W, H = 900, 560
	const left, right, top, bottom = 80, 250, 56, 60
	type pt struct {
		x, y  float64
		label string
	}
	type series struct {
		name   string
		color  string
		dashed bool
		pts    []pt
		w3     *pt
	}
	colors := map[string]string{"paros": "#d62728", "paros-plaintext": "#e8a0a0", "paros-replicas": "#9467bd", "paros-proxies": "#8c564b", "etcd": "#1f77b4", "nats-always": "#2ca02c", "nats-default": "#98df8a"}
	var ss []series
	for _, s := range r.Systems {
		se := series{name: s.Title, color: colors[s.Key]}
		switch s.Key {
		case "paros":
			se.name = "paros, one client.Writer"
		case "paros-plaintext":
			se.name = "paros (plaintext)"
			se.dashed = true
		case "paros-replicas":
			se.name = "paros, 2 replicas"
			se.dashed = true
		case "paros-proxies":
			se.name = "paros, 2 proxies"
			se.dashed = true
		}
		for _, id := range []string{"w1", "w2-64", "w2-1000"} {
			if p := r.phase(s.Key, id); p != nil {
				se.pts = append(se.pts, pt{p.RecsPerS, p.P50ms, id})
			}
		}
		if p := r.phase(s.Key, "w3-16"); p != nil {
			se.w3 = &pt{p.RecsPerS, p.P50ms, "W3"}
		}
		ss = append(ss, se)
		if s.Key == "paros" {
			for _, v := range []struct{ suffix, name, color string }{
				{"journals", "paros, 64 journals", "#ff7f0e"},
			} {
				sv := series{name: v.name, color: v.color, dashed: true}
				if p := r.phase("paros", "w1"); p != nil {
					sv.pts = append(sv.pts, pt{p.RecsPerS, p.P50ms, "w1"})
				}
				for _, id := range []string{"w2-64-" + v.suffix, "w2-1000-" + v.suffix} {
					if p := r.phase("paros", id); p != nil {
						sv.pts = append(sv.pts, pt{p.RecsPerS, p.P50ms, id})
					}
				}
				ss = append(ss, sv)
			}
		}
	}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		all := s.pts
		if s.w3 != nil {
			all = append(append([]pt(nil), all...), *s.w3)
		}
		for _, p := range all {
			if p.x > 0 && p.y > 0 {
				xmin, xmax = math.Min(xmin, p.x), math.Max(xmax, p.x)
				ymin, ymax = math.Min(ymin, p.y), math.Max(ymax, p.y)
			}
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax, ymin, ymax = 1, 10, 1, 10
	}
	lx0, lx1 := math.Floor(math.Log10(xmin*0.8)), math.Ceil(math.Log10(xmax*1.25))
	ly0, ly1 := math.Floor(math.Log10(ymin*0.8)), math.Ceil(math.Log10(ymax*1.25))
	if lx1 == lx0 {
		lx1++
	}
	if ly1 == ly0 {
		ly1++
	}
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	X := func(v float64) float64 { return left + (math.Log10(v)-lx0)/(lx1-lx0)*pw }
	Y := func(v float64) float64 { return top + ph - (math.Log10(v)-ly0)/(ly1-ly0)*ph }
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="20" font-size="15" font-weight="bold">Throughput vs p50 write latency</text>`+"\n", left)
	w(`<text x="%d" y="38" font-size="11" fill="#555">3 members on 127.0.0.1, %d B records, fsync before ack (JetStream default sync: lazy, not durable on ack); %s</text>`+"\n", left, r.RecordBytes, r.Date)
	for e := lx0; e <= lx1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if math.Log10(v) > lx1 {
				break
			}
			x := X(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
				w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, H-bottom+18, axisLabel(v))
			}
			w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, top, x, H-bottom, stroke)
		}
	}
	for e := ly0; e <= ly1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if math.Log10(v) > ly1 {
				break
			}
			y := Y(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
				w(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, axisLabel(v))
			}
			w(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, y, W-right, y, stroke)
		}
	}
	w(`<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	w(`<text x="%.0f" y="%d" text-anchor="middle">records/s acknowledged (log)</text>`+"\n", left+pw/2, H-18)
	w(`<text transform="translate(20 %.0f) rotate(-90)" text-anchor="middle">p50 write latency, ms (log)</text>`+"\n", top+ph/2)
	for i, s := range ss {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, p := range s.pts {
			if p.x > 0 && p.y > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", X(p.x), Y(p.y)))
			}
		}
		if len(pts) > 1 {
			w(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		}
		for _, p := range s.pts {
			if p.x > 0 && p.y > 0 {
				w(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s %s: %.0f rec/s, p50 %.2f ms</title></circle>`+"\n", X(p.x), Y(p.y), s.color, s.name, p.label, p.x, p.y)
			}
		}
		if s.w3 != nil && s.w3.x > 0 && s.w3.y > 0 {
			w(`<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s" stroke="#000"><title>%s W3 16×64: %.0f rec/s, p50 %.2f ms</title></rect>`+"\n", X(s.w3.x)-4.5, Y(s.w3.y)-4.5, s.color, s.name, s.w3.x, s.w3.y)
		}
		ly := top + 10 + i*22
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", W-right+15, ly, W-right+45, ly, s.color, dash)
		w(`<circle cx="%d" cy="%d" r="4" fill="%s"/>`+"\n", W-right+30, ly, s.color)
		w(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", W-right+52, ly, s.name)
	}
	ly := top + 10 + len(ss)*22 + 10
	w(`<rect x="%d" y="%d" width="9" height="9" fill="#fff" stroke="#000"/>`+"\n", W-right+25, ly-4)
	w(`<text x="%d" y="%d" dominant-baseline="middle">W3: 16 writes × 64 records</text>`+"\n", W-right+52, ly)
	w(`<text x="%d" y="%d" font-size="11" fill="#555">circles: 1, 64, 1,000 single-record</text>`+"\n", W-right+15, ly+22)
	w(`<text x="%d" y="%d" font-size="11" fill="#555">writes in flight (W1, W2)</text>`+"\n", W-right+15, ly+36)
	w("</svg>\n")
	return b.String()
}

func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
