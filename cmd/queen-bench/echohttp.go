package main

import (
	"bufio"
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
	var mu sync.Mutex // guards conns and closed: the accept loop adds, each connection's goroutine removes, closeAll ends them
	conns := map[net.Conn]struct{}{}
	closed := false
	closeAll := func() {
		l.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
	stop := context.AfterFunc(ctx, closeAll)
	defer stop()
	fmt.Fprintf(out, "echo http://%s pid %d delay %s\n", l.Addr(), os.Getpid(), delay)
	for {
		c, err := l.Accept()
		if err != nil {
			closeAll()
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
		if closed { // accepted as it was stopping
			mu.Unlock()
			c.Close()
			continue
		}
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
	var body, answer []byte
	for {
		n, err := requestLength(r)
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
		statuses := echoFor(body)
		answer = append(answer[:0], "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: "...)
		answer = strconv.AppendInt(answer, int64(len(statuses)), 10)
		answer = append(append(answer, "\r\n\r\n"...), statuses...)
		if _, err := c.Write(answer); err != nil {
			return err
		}
	}
}

// maxEchoBody bounds a request body the HTTP floor reads.
const maxEchoBody = 1 << 20

// requestLength reads a request's head and answers its body's length: the
// floor frames bodies by Content-Length alone (none: no body), up to
// maxEchoBody; anything else is an error and the connection closes.
func requestLength(r *bufio.Reader) (int, error) {
	head, err := readHead(r, maxEchoBody)
	if err != nil {
		return 0, err
	}
	if head.chunked {
		return 0, errors.New("a chunked body: the floor reads Content-Length bodies only")
	}
	return head.length, nil
}
