package jsonapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// Maintenance, health and the owners' table.

func TestDecodeMaintenance(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, c := range []struct {
		body string
		want *bool
		err  string
	}{
		{body: ``},
		{body: `{}`},
		{body: `null`},
		{body: `{"enabled":null}`},
		{body: `{"enabled":true}`, want: &yes},
		{body: `{"enabled":false,"other":1}`, want: &no},
		{body: `{"enabled":"true"}`, err: "maintenance body: json: cannot unmarshal string into Go struct field .enabled of type bool"},
		{body: `{"enabled":1}`, err: "maintenance body: json: cannot unmarshal number into Go struct field .enabled of type bool"},
		{body: `enabled`, err: "maintenance body: invalid character 'e' looking for beginning of value"},
		{body: `{"enabled":true`, err: "maintenance body: unexpected end of JSON input"},
	} {
		got, err := DecodeMaintenance([]byte(c.body))
		wantBad(t, err, c.err)
		if c.err == "" && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.body, got, c.want)
		}
	}
}

func TestAppendMaintenance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m    Maintenance
		want string
	}{
		{Maintenance{BufferHealthy: true, DBHealthy: true},
			`{"bufferHealthy":true,"bufferStats":{"pendingCount":0,"failedCount":0,"dbHealthy":true,"failedFiles":{}},"bufferedMessages":0,"maintenanceMode":false,"message":"maintenance mode is off: pushes go to PostgreSQL","popMaintenanceMode":false}`},
		{Maintenance{On: true, Buffered: 1234, BufferHealthy: true, PopOn: true},
			`{"bufferHealthy":true,"bufferStats":{"pendingCount":1234,"failedCount":0,"dbHealthy":false,"failedFiles":{}},"bufferedMessages":1234,"maintenanceMode":true,"message":"maintenance mode is on: pushes are buffered in the spool and drained when it ends","popMaintenanceMode":true}`},
		{Maintenance{On: true, Buffered: 9000000000},
			`{"bufferHealthy":false,"bufferStats":{"pendingCount":9000000000,"failedCount":0,"dbHealthy":false,"failedFiles":{}},"bufferedMessages":9000000000,"maintenanceMode":true,"message":"maintenance mode is on: pushes are buffered in the spool and drained when it ends; the spool cannot take more (none configured, or full)","popMaintenanceMode":false}`},
		{Maintenance{},
			`{"bufferHealthy":false,"bufferStats":{"pendingCount":0,"failedCount":0,"dbHealthy":false,"failedFiles":{}},"bufferedMessages":0,"maintenanceMode":false,"message":"maintenance mode is off: pushes go to PostgreSQL; the spool cannot take more (none configured, or full)","popMaintenanceMode":false}`},
	} {
		golden(t, AppendMaintenance([]byte{}, c.m), c.want)
	}
	golden(t, AppendPopMaintenance(nil, true), `{"popMaintenanceMode":true,"message":"pop maintenance mode is on: every pop answers 204 (nothing) until it is switched off"}`)
	golden(t, AppendPopMaintenance(nil, false), `{"popMaintenanceMode":false,"message":"pop maintenance mode is off: pops deliver"}`)
}

func TestDecodeSwitch(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int{`{"enabled":true}`: 1, `{"enabled":false,"x":1}`: 0,
		``: -1, `{}`: -1, `{"enabled":null}`: -1, `{"enabled":"true"}`: -1, `{"enabled":1}`: -1, `[true]`: -1, `{"enabled":true`: -1} {
		on, err := DecodeSwitch([]byte(body))
		if want < 0 {
			wantBad(t, err, "enabled (boolean) is required")
		} else if err != nil || on != (want == 1) {
			t.Errorf("%s: %v %v", body, on, err)
		}
	}
}

func TestAppendHealth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		postgres, nats string
		status         int
		want           string
	}{
		{"up", "up", 200, `{"status":"healthy","postgres":"up","nats":"up"}`},
		{"up", "disabled", 200, `{"status":"healthy","postgres":"up","nats":"disabled"}`},
		{"down", "up", 503, `{"status":"unhealthy","postgres":"down","nats":"up"}`},
		{"up", "down", 503, `{"status":"unhealthy","postgres":"up","nats":"down"}`},
		{"down", "disabled", 503, `{"status":"unhealthy","postgres":"down","nats":"disabled"}`},
	} {
		status, body := AppendHealth(nil, c.postgres, c.nats)
		if status != c.status {
			t.Errorf("%s/%s: status %d, want %d", c.postgres, c.nats, status, c.status)
		}
		golden(t, body, c.want)
	}
}

// The owners' table in the accounts mode (ownership renders the table):
// the same table with the tenant first.
func TestAppendOwnersWithTenant(t *testing.T) {
	t.Parallel()
	enc := []byte(`{"version":"v-3","buckets":4,"bridges":[{"id":"b\"2","subject":"queen.v1.push.b2"}],"owners":[0,0,0,0]}`)
	with := AppendOwnersWithTenant(nil, enc, uuidB)
	golden(t, with, `{"tenant":"ffeeddcc-bbaa-9988-7766-554433221100","version":"v-3","buckets":4,"bridges":[{"id":"b\"2","subject":"queen.v1.push.b2"}],"owners":[0,0,0,0]}`)
	var back, want map[string]any
	if err := json.Unmarshal(with, &back); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(enc, &want); err != nil {
		t.Fatal(err)
	}
	want["tenant"] = uuidBText
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("reads back as %+v, want %+v", back, want)
	}
}

// FuzzDecodeSwitch reads any switch body: no panic; a refusal is the one
// BadRequest; a body let through has a boolean enabled, the one decoded.
func FuzzDecodeSwitch(f *testing.F) {
	for _, s := range []string{`{"enabled":true}`, `{"enabled":false}`, `{}`, `{"enabled":"true"}`, `null`, `[true]`, `{"enabled":true,"enabled":false}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		on, err := DecodeSwitch(body)
		if err != nil {
			var bad *BadRequest
			if !errors.As(err, &bad) || err.Error() != "enabled (boolean) is required" {
				t.Fatalf("refusal %v", err)
			}
			return
		}
		var v struct{ Enabled *bool }
		if json.Unmarshal(body, &v) != nil || v.Enabled == nil || *v.Enabled != on {
			t.Fatalf("%q let through as %v", body, on)
		}
	})
}

// The slots behind their bound join a health answer as publishBehind; with
// none, the answer is left as it was.
func TestAppendHealthBehind(t *testing.T) {
	_, health := AppendHealth(nil, "up", "disabled")
	if got := string(AppendHealthBehind(nil, health, nil)); got != string(health) {
		t.Fatalf("no slots: %s", got)
	}
	want := `{"status":"healthy","postgres":"up","nats":"disabled","publishBehind":["a/queen_publish_a","b/s"]}`
	if got := string(AppendHealthBehind(nil, health, []string{"a/queen_publish_a", "b/s"})); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
