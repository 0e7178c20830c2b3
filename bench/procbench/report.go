package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// figure is one measured quantity over all runs, in its unit (ms or MiB).
type figure struct {
	Name    string    `json:"name"`
	Unit    string    `json:"unit"`
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	P10     float64   `json:"p10"`
	P90     float64   `json:"p90"`
	Target  float64   `json:"target,omitempty"` // upper bound from the issues; 0: none
	Met     *bool     `json:"met,omitempty"`    // median under Target; informative, never an error
	Samples []float64 `json:"samples"`
}

type report struct {
	Machine   machine  `json:"machine"`
	Runs      int      `json:"runs"`
	Questions int      `json:"permission_questions"` // asked by the agent over all runs; 0 expected
	Compared  string   `json:"compared,omitempty"`   // -compare: the other ACP agent's command
	Figures   []figure `json:"figures"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b int64) float64        { return float64(b) / (1 << 20) }

// figures turns the runs into the table's rows, with the targets of issues 2, 5, 8 and 11.
func figures(ss []sample) []figure {
	col := func(f func(sample) float64) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = f(s)
		}
		return out
	}
	return []figure{
		newFigure("spawn → initialize answered", "ms", 10, col(func(s sample) float64 { return ms(s.spawnInit) })),
		newFigure("session/new", "ms", 10, col(func(s sample) float64 { return ms(s.newSession) })),
		newFigure("turn: 2 model requests + sandboxed echo", "ms", 50, col(func(s sample) float64 { return ms(s.turn) })),
		newFigure("cancel → every process of the command gone", "ms", 100, col(func(s sample) float64 { return ms(s.cancelGone) })),
		newFigure("cancel → prompt answered cancelled", "ms", 0, col(func(s sample) float64 { return ms(s.cancelAnswered) })),
		newFigure("peak memory, front end + broker", "MiB", 40, col(func(s sample) float64 { return mib(s.memFront + s.memBroker) })),
		newFigure("  peak memory, front end (garuda)", "MiB", 0, col(func(s sample) float64 { return mib(s.memFront) })),
		newFigure("  peak memory, broker (garuda-exec)", "MiB", 0, col(func(s sample) float64 { return mib(s.memBroker) })),
		newFigure("  anonymous memory now, both (RssAnon)", "MiB", 0, col(func(s sample) float64 { return mib(s.anon) })),
		newFigure("exit after stdin closes", "ms", 1000, col(func(s sample) float64 { return ms(s.exit) })),
	}
}

// compareFigures are the -compare rows: the other agent's spawn → initialize, and garuda's over it run by run (the
// two measured one right after the other), against issue 19's goal of 0.25.
func compareFigures(ss []sample, name string) []figure {
	other, ratio := make([]float64, len(ss)), make([]float64, len(ss))
	for i, s := range ss {
		other[i] = ms(s.otherInit)
		ratio[i] = float64(s.spawnInit) / float64(s.otherInit)
	}
	return []figure{
		newFigure("spawn → initialize answered, "+name, "ms", 0, other),
		newFigure("  garuda ÷ "+name+", run by run", "×", 0.25, ratio),
	}
}

func newFigure(name, unit string, target float64, xs []float64) figure {
	f := figure{Name: name, Unit: unit, Target: target, Samples: xs}
	s := slices.Clone(xs)
	slices.Sort(s)
	f.Min, f.Max = s[0], s[len(s)-1]
	f.Median = median(s)
	f.P10, f.P90 = percentile(s, 10), percentile(s, 90)
	if target > 0 {
		met := f.Median < target
		f.Met = &met
	}
	return f
}

// median of sorted values: the middle one, or the mean of the two middle ones.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile of sorted values by the nearest-rank method.
func percentile(s []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func (r report) table(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "garuda whole-process figures: %d runs after 1 warm-up\n", r.Runs)
	fmt.Fprintf(w, "machine: %d CPUs (%s), %d MiB RAM, Linux %s, %s %s\n", m.CPUs, m.CPU, m.MemMiB, m.Kernel, m.Go, m.Machine)
	if r.Compared != "" {
		fmt.Fprintf(w, "compared with: %s (its start measured right after garuda's in each run)\n", r.Compared)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmedian\tp10\tp90\tmin\tmax\ttarget\tmedian under target\t")
	for _, f := range r.Figures {
		target, met := "", ""
		if f.Target > 0 {
			target = "< " + num(f.Target) + " " + f.Unit
			met = map[bool]string{true: "yes", false: "NO"}[*f.Met]
		}
		u := " " + f.Unit
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", strings.TrimRight(f.Name, " "),
			num(f.Median)+u, num(f.P10)+u, num(f.P90)+u, num(f.Min)+u, num(f.Max)+u, target, met)
	}
	tw.Flush()
	if r.Questions > 0 {
		fmt.Fprintf(w, "\nnote: the agent asked %d permission questions (answered at once); build mode should ask none\n", r.Questions)
	}
	fmt.Fprintln(w, "\nTargets are goals, not checks: a missed one is reported here and never fails the run.")
}

func num(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}
