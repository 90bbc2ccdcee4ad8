package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// serveEchoHTTP runs the HTTP floor on addr until ctx ends: every request
// is answered 201 with one "queued" status per item of its body after
// delay, whatever its method and path, on a kept-alive connection.
func serveEchoHTTP(ctx context.Context, addr string, delay time.Duration, out io.Writer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns: the accept loop adds, each connection's goroutine removes
	conns := map[net.Conn]struct{}{}
	stop := context.AfterFunc(ctx, func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	fmt.Fprintf(out, "echo http://%s pid %d delay %s\n", l.Addr(), os.Getpid(), delay)
	for {
		c, err := l.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return nil
				}
				return ctx.Err()
			}
			return err
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = echoConn(c, delay)
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// echoConn answers c's requests one after the other until it ends or a
// request cannot be read.
func echoConn(c net.Conn, delay time.Duration) error {
	r := bufio.NewReaderSize(c, 4096)
	item := []byte(`{"queue":`)
	var body, answer []byte
	for {
		n, err := readHead(r)
		if err != nil {
			return err
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		statuses := echoAnswer(bytes.Count(body, item))
		answer = append(answer[:0], "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: "...)
		answer = strconv.AppendInt(answer, int64(len(statuses)), 10)
		answer = append(append(answer, "\r\n\r\n"...), statuses...)
		if _, err := c.Write(answer); err != nil {
			return err
		}
	}
}

// readHead reads one request's head and answers its Content-Length (0
// when it has none).
func readHead(r *bufio.Reader) (int, error) {
	n := 0
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if first {
				return 0, errors.New("empty request line")
			}
			return n, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(name, []byte("Content-Length")) {
			n, err = strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		}
	}
}
