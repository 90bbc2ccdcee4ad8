package jsonapi

// OptionDefaults are the values of Queen's numeric queue options on a queue
// that does not set them: what the answers show (a message's queueConfig,
// a queue's status) and, for the options the bridge acts on, what it
// applies. The database holds the same for the options it acts on, in one
// function (pgwire's consumer_option_v2), and docs/api.md in one table;
// pgwire's TestOptionDefaultsAgree holds the three to each other. This is
// the one Go declaration of them: every Go user reads it.
var OptionDefaults = map[string]int64{
	"leaseTime":          300,  // seconds a pop's lease lasts
	"retryLimit":         3,    // failures of a message before it goes to the dead letters
	"delayedProcessing":  0,    // seconds a message waits before a pop delivers it
	"windowBuffer":       0,    // seconds a partition's newest message must age before a pop claims it
	"maxWaitTimeSeconds": 0,    // with retentionEnabled, seconds after which a message is evicted (0: never)
	"retryDelay":         1000, // not acted on
	"ttl":                3600, // not acted on
	"priority":           0,    // not acted on
}
