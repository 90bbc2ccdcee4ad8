package jsonapi

import (
	"encoding/json"
	"strconv"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// DecodeMaintenance reads a maintenance request: a read ({} or an empty
// body: nil) or a set ({"enabled": bool}).
func DecodeMaintenance(body []byte) (*bool, error) {
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, Badf("maintenance body: %s", err.Error())
		}
	}
	return req.Enabled, nil
}

// DecodeSwitch reads the body of a switch over HTTP (POST
// /api/v1/system/maintenance and /maintenance/pop): {"enabled": bool},
// which Queen requires.
func DecodeSwitch(body []byte) (bool, error) {
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if json.Unmarshal(body, &req) != nil || req.Enabled == nil {
		return false, Badf("enabled (boolean) is required")
	}
	return *req.Enabled, nil
}

// Maintenance is the answer to a maintenance request, with Queen's
// fields: BufferHealthy says whether pushes PostgreSQL cannot take have
// somewhere to go (a spool that is not full).
type Maintenance struct {
	On            bool
	PopOn         bool  // pop maintenance: pops deliver nothing
	Buffered      int64 // records waiting in the spool
	BufferHealthy bool
	DBHealthy     bool // PostgreSQL answered just now
}

// AppendMaintenance appends {"bufferHealthy","bufferStats",
// "bufferedMessages","maintenanceMode","message","popMaintenanceMode"}:
// Queen's GET and POST answers in one. bufferStats is Queen's file
// buffer's: pendingCount the spool's records, failedCount 0 and
// failedFiles {} (the spool keeps no failed files: a record that cannot be
// replayed stays pending).
func AppendMaintenance(out []byte, m Maintenance) []byte {
	msg := "maintenance mode is off: pushes go to PostgreSQL"
	if m.On {
		msg = "maintenance mode is on: pushes are buffered in the spool and drained when it ends"
	}
	if !m.BufferHealthy {
		msg += "; the spool cannot take more (none configured, or full)"
	}
	out = append(out, `{"bufferHealthy":`...)
	out = strconv.AppendBool(out, m.BufferHealthy)
	out = append(out, `,"bufferStats":{"pendingCount":`...)
	out = strconv.AppendInt(out, m.Buffered, 10)
	out = append(out, `,"failedCount":0,"dbHealthy":`...)
	out = strconv.AppendBool(out, m.DBHealthy)
	out = append(out, `,"failedFiles":{}},"bufferedMessages":`...)
	out = strconv.AppendInt(out, m.Buffered, 10)
	out = append(out, `,"maintenanceMode":`...)
	out = strconv.AppendBool(out, m.On)
	out = append(out, `,"message":`...)
	out = AppendString(out, msg)
	out = append(out, `,"popMaintenanceMode":`...)
	out = strconv.AppendBool(out, m.PopOn)
	return append(out, '}')
}

// AppendPopMaintenance appends the pop maintenance answer:
// {"popMaintenanceMode","message"}.
func AppendPopMaintenance(out []byte, on bool) []byte {
	msg := "pop maintenance mode is off: pops deliver"
	if on {
		msg = "pop maintenance mode is on: every pop answers 204 (nothing) until it is switched off"
	}
	out = append(out, `{"popMaintenanceMode":`...)
	out = strconv.AppendBool(out, on)
	out = append(out, `,"message":`...)
	out = AppendString(out, msg)
	return append(out, '}')
}

// AppendHealth appends GET /health's answer and says its status: healthy
// (200) when PostgreSQL and NATS (when configured) are up, else unhealthy
// (503). Each is "up", "down" or, for NATS, "disabled".
func AppendHealth(dst []byte, postgres, nats string) (int, []byte) {
	status, word := 200, "healthy"
	if postgres == "down" || nats == "down" {
		status, word = 503, "unhealthy"
	}
	dst = AppendString(append(dst, `{"status":`...), word)
	dst = AppendString(append(dst, `,"postgres":`...), postgres)
	dst = AppendString(append(dst, `,"nats":`...), nats)
	return status, append(dst, '}')
}

// AppendOwnersWithTenant appends table, an encoded owners' table (without a
// tenant), with tenant set: the answer to a request in the accounts mode.
func AppendOwnersWithTenant(dst, table []byte, tenant tenancy.TenantID) []byte {
	dst = append(dst, `{"tenant":"`...)
	dst = AppendUUID(dst, tenant)
	dst = append(dst, `",`...)
	return append(dst, table[1:]...)
}

// AppendHealthBehind appends health, a health answer, with the publish
// slots that fell behind their bound (database/slot) added: the bridge
// still serves, so the status stays, but an operator sees the slot that
// holds WAL.
func AppendHealthBehind(dst, health []byte, slots []string) []byte {
	if len(slots) == 0 || len(health) == 0 || health[len(health)-1] != '}' {
		return append(dst, health...)
	}
	dst = append(dst, health[:len(health)-1]...)
	dst = append(dst, `,"publishBehind":[`...)
	for i, s := range slots {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, "]}"...)
}
