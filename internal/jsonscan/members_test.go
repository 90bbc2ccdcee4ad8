package jsonscan_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// Members hands each member's unescaped name to its function with the
// cursor on the value, and tells the function's errors from syntax errors.
func TestMembers(t *testing.T) {
	walk := func(body string, member func(s *jsonscan.Scanner, name string) error) (string, error) {
		s := jsonscan.New([]byte(body))
		var got []string
		err := s.Members(func(name []byte) error {
			v, err := s.Value(0)
			if err != nil {
				return err
			}
			got = append(got, string(name)+"="+string(v))
			return member(s, string(name))
		})
		return strings.Join(got, ","), err
	}
	none := func(*jsonscan.Scanner, string) error { return nil }
	for _, c := range []struct{ body, want string }{
		{` {}`, ""},
		{`{"a":1, "b" : [2,3] ,"c\u0041":"x"}`, `a=1,b=[2,3],cA="x"`},
	} {
		got, err := walk(c.body, none)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.body, got, err, c.want)
		}
	}
	boom := errors.New("boom")
	_, err := walk(`{"a":1,"b":2}`, func(_ *jsonscan.Scanner, name string) error {
		if name == "b" {
			return boom
		}
		return nil
	})
	var m *jsonscan.MemberError
	if !errors.As(err, &m) || !errors.Is(err, boom) {
		t.Errorf("member's error: %v (%T)", err, err)
	}
	for _, body := range []string{`[1]`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a":1,}`, `{"a":1`} {
		if _, err := walk(body, none); err == nil || errors.As(err, &m) {
			t.Errorf("%s: %v, want a syntax error", body, fmt.Sprint(err))
		}
	}
}
