package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
)

// jsReport prints one mode's figures.
func jsReport(out io.Writer, r *jsResult, late *lateness) {
	fmt.Fprintf(out, "pushed     %d (%.0f/s) in %s\n", r.pushed, r.pushRate(), r.pushTime.Round(time.Millisecond))
	if late != nil {
		fmt.Fprintf(out, "late       %s\n", late)
	}
	if r.consumers > 0 {
		what := "first deliveries by the end of the publishing"
		if r.mode == "drain" {
			what = "the backlog, from the first pull"
		}
		fmt.Fprintf(out, "consumed   %d (%.0f/s) in %s: %s; %d delivered again\n", r.consumed, r.consumeRate(), r.consumeTime.Round(time.Millisecond),
			what, r.again)
	}
	if len(r.lat) > 0 {
		from := "send"
		if r.asked > 0 {
			from = "scheduled send"
		}
		p50, p90, p99, top := jsQuantiles(r.lat)
		fmt.Fprintf(out, "latency    publish-to-receive p50 %s  p90 %s  p99 %s  max %s (%d messages, from the %s time)\n", ms(p50), ms(p90), ms(p99),
			ms(top), len(r.lat), from)
	}
	if len(r.toStored) > 0 {
		a50, a90, _, _ := jsQuantiles(r.toStored)
		b50, b90, _, _ := jsQuantiles(r.fromStored)
		fmt.Fprintf(out, "split      at the stored timestamp: publish to stored p50 %s  p90 %s; stored to receive p50 %s  p90 %s (%d messages)\n",
			ms(a50), ms(a90), ms(b50), ms(b90), len(r.toStored))
	}
	switch r.mode {
	case "push":
		fmt.Fprintf(out, "cpu/msg    per pushed message: %s\n", r.cpu)
	case "drain":
		fmt.Fprintf(out, "cpu/msg    per pushed message (the backlog): %s\n", r.pushCPU)
		fmt.Fprintf(out, "cpu/msg    per consumed message (the drain): %s\n", r.cpu)
		fmt.Fprintf(out, "ratio      consumed ÷ pushed CPU a message: server %s, postgres %s\n", ratioOf(r.serverOf(r.cpu), r.serverOf(r.pushCPU)),
			ratioOf(r.cpu.pg, r.pushCPU.pg))
	default:
		fmt.Fprintf(out, "cpu/msg    per pushed + consumed message: %s\n", r.cpu)
	}
	if r.errs > 0 {
		fmt.Fprintf(out, "errors     %d, the first: %v\n", r.errs, r.firstErr)
	}
}

// jsQuantiles are p50, p90, p99 and the maximum of sorted latencies.
func jsQuantiles(sorted []time.Duration) (p50, p90, p99, top time.Duration) {
	if len(sorted) == 0 {
		return 0, 0, 0, 0
	}
	at := func(q int) time.Duration { return sorted[len(sorted)*q/100] }
	return at(50), at(90), at(99), sorted[len(sorted)-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// ratioOf is a ÷ b, or n/a.
func ratioOf(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// jsDurableLine reports the durable's own account once its acks are in
// (waiting up to 10 s for the last ones: Ack is not answered): what it
// delivered and what is still unacknowledged or redelivered. nil when the
// target could not say.
func jsDurableLine(ctx context.Context, out io.Writer, c js.Consumer) *js.ConsumerInfo {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var info *js.ConsumerInfo
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, err = c.Info(ctx); err != nil || info.NumAckPending == 0 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		fmt.Fprintf(out, "durable    no info: %v\n", err)
		return nil
	}
	fmt.Fprintf(out, "durable    %s: delivered to stream seq %d, ack floor %d, %d acks pending, %d redelivered, %d not delivered\n", info.Name,
		info.Delivered.Stream, info.AckFloor.Stream, info.NumAckPending, info.NumRedelivered, info.NumPending)
	return info
}

// jsTable prints every run side by side, the ratios the targets are
// stated in, and a machine-readable line per run (compare-jsconsume.sh
// takes their medians).
func jsTable(out io.Writer, o options, rs []*jsResult) {
	ack := "Ack"
	if o.jsc.doubleAck {
		ack = "DoubleAck"
	}
	fmt.Fprintf(out, "\njetstream consumers: %d publishers (PublishAsync, %d pending), %d Consume() consumers of one durable (%s), %d-byte payloads over %d subjects, %s a mode\n",
		o.clients, o.js.window, o.jsc.consumers, ack, o.payload, o.partitions, o.duration)
	fmt.Fprintf(out, "%-8s %-6s %10s %11s %9s %9s %9s %32s\n", "target", "mode", "pushed/s", "consumed/s", "p50", "p90", "p99",
		"cpu µs/msg server/pg/client")
	find := func(target, mode string) *jsResult {
		for _, r := range rs {
			if r.target == target && r.mode == mode {
				return r
			}
		}
		return nil
	}
	for _, r := range rs {
		consumed, p50, p90, p99 := "—", "—", "—", "—"
		if r.consumers > 0 {
			consumed = fmt.Sprintf("%.0f", r.consumeRate())
		}
		if len(r.lat) > 0 {
			a, b, c, _ := jsQuantiles(r.lat)
			p50, p90, p99 = ms(a), ms(b), ms(c)
		}
		cpu := fmt.Sprintf("%s / %s / %s", us(r.serverOf(r.cpu)), us(r.cpu.pg), us(r.cpu.bench))
		fmt.Fprintf(out, "%-8s %-6s %10.0f %11s %9s %9s %9s %32s\n", r.target, r.mode, r.pushRate(), consumed, p50, p90, p99, cpu)
	}
	fmt.Fprintln(out, "cpu a message: push per pushed; drain per consumed; both, paced, lone per pushed + consumed. p50…p99: publish to receive")
	for _, r := range rs {
		consumed := "n/a"
		if r.consumers > 0 {
			consumed = fmt.Sprintf("%.0f", r.consumeRate())
		}
		line := fmt.Sprintf("result target=%s mode=%s pushed_s=%.0f consumed_s=%s srv_us=%s pg_us=%s client_us=%s asked_s=%.0f again=%d errors=%d",
			r.target, r.mode, r.pushRate(), consumed, us(r.serverOf(r.cpu)), us(r.cpu.pg), us(r.cpu.bench), r.asked, r.again, r.errs)
		if len(r.lat) > 0 {
			a, b, c, _ := jsQuantiles(r.lat)
			line += fmt.Sprintf(" p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f", float64(a)/1e6, float64(b)/1e6, float64(c)/1e6)
		}
		switch r.mode {
		case "drain":
			line += fmt.Sprintf(" push_srv_us=%s push_pg_us=%s srv_ratio=%s pg_ratio=%s", us(r.serverOf(r.pushCPU)), us(r.pushCPU.pg),
				plain(r.serverOf(r.cpu), r.serverOf(r.pushCPU)), plain(r.cpu.pg, r.pushCPU.pg))
			if a := find("always", "drain"); a != nil {
				line += " vs_always=" + plain(r.consumeRate(), a.consumeRate())
			}
		case "both":
			if p := find(r.target, "push"); p != nil {
				line += " pushed_vs_push=" + plain(r.pushRate(), p.pushRate()) + " consumed_vs_push=" + plain(r.consumeRate(), p.pushRate())
			}
		}
		fmt.Fprintln(out, line)
	}
}

// plain is a ÷ b with three decimals, or n/a.
func plain(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", a/b)
}
