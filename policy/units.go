package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// minMemory keeps a typo such as `memory: 2` (two bytes) from starting a box
// that cannot run anything.
const minMemory = 1 << 20

// parseSize reads a byte size: a whole number of bytes, or a number with a
// binary unit K, M, G or T (optionally followed by "i" and/or "B", any case),
// such as 512M, 2G, 1.5Gi, 4096.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(u, "B")
	u = strings.TrimSuffix(u, "I")
	mult := float64(1)
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			u = u[:n-1]
		}
	}
	if u == "" || strings.ContainsAny(u, "+-eEnNxX_") {
		return 0, fmt.Errorf("%q is not a size (want a number of bytes or one with K, M, G or T, such as 512M or 2G)", s)
	}
	f, err := strconv.ParseFloat(u, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size (want a number of bytes or one with K, M, G or T, such as 512M or 2G)", s)
	}
	v := f * mult
	if v > float64(1<<62) {
		return 0, fmt.Errorf("%q is too large", s)
	}
	n := int64(v)
	if n < minMemory {
		return 0, fmt.Errorf("%q is below the minimum of 1M", s)
	}
	return n, nil
}

// parseCPU reads a CPU share: a percentage of one core ("150%") or a number
// of cores ("1.5", 2).
func parseCPU(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	if t == "" || strings.ContainsAny(t, "+-eEnNxX_") {
		return 0, fmt.Errorf("%q is not a CPU share (want cores such as 1.5 or a percentage such as 150%%)", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a CPU share (want cores such as 1.5 or a percentage such as 150%%)", s)
	}
	if pct {
		f /= 100
	}
	if f < 0.01 {
		return 0, fmt.Errorf("%q is below the minimum of 1%% of a core", s)
	}
	if f > 4096 {
		return 0, fmt.Errorf("%q is more cores than any host has", s)
	}
	return f, nil
}

// parseDuration reads a Go duration ("30s", "1h30m") that must be positive.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want a number with a unit, such as 90s, 30m or 1h30m)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be longer than zero", s)
	}
	return d, nil
}

// parseTokens reads a token count: a whole number, with an optional
// decimal k or M ("500k", "2M").
func parseTokens(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "k"), strings.HasSuffix(t, "K"):
		mult, t = 1000, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1000000, t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 1 || n > (1<<50)/mult {
		return 0, fmt.Errorf("%q: want a whole number of tokens (500000, 500k, 2M)", s)
	}
	return n * mult, nil
}
