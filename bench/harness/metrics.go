package main

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeSeries reads every series of the Prometheus text at
// http://addr/metrics, keyed by the series as written (name and labels);
// nil when the process does not answer. The one parser of /metrics in the
// harness: the rows pick the series they need from it.
func scrapeSeries(addr string) map[string]float64 {
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		series, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[series] = v
		}
	}
	return out
}
