package metrics_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/metrics"
	"github.com/queenbridge/queenbridge/pgwire"
)

// Real PostgreSQL: the rooms whose Stats the collectors read run on it,
// and the lag collector queries it at scrape time.
func TestMain(m *testing.M) { testenv.Main(m) }

func newDB(t testing.TB) *pgwire.DB { return testkit.OpenDB(t, testenv.NewDatabase(t), 8) }

// scrape serves one scrape of m's handler and returns every sample by its
// series (name and labels as exposed, e.g. `x_total{status="queued"}`).
func scrape(t testing.TB, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// want checks samples of one scrape.
func want(t testing.TB, got map[string]float64, samples map[string]float64) {
	t.Helper()
	for series, v := range samples {
		g, ok := got[series]
		if !ok {
			t.Errorf("no %s in the scrape", series)
		} else if g != v {
			t.Errorf("%s = %v, want %v", series, g, v)
		}
	}
}
