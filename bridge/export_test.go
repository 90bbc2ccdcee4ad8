package bridge

// EndpointSubjects lists the subjects of the NATS micro service's
// endpoints as registered.
func (b *Bridge) EndpointSubjects() []string {
	var out []string
	for _, ep := range b.svc.Info().Endpoints {
		out = append(out, ep.Subject)
	}
	return out
}

// ConsoleSample takes one sample of the console's figures now, as its
// sampler does every 2 s.
func (b *Bridge) ConsoleSample() { b.console.Sample() }

// RoomRoutes lists the routes of the rooms' tables as the front door
// registers them ("METHOD pattern"), and which take admin tokens.
func (b *Bridge) RoomRoutes() map[string]bool {
	out := map[string]bool{}
	for _, rt := range b.roomRoutes() {
		out[rt.Method+" "+rt.Pattern] = rt.Admin
	}
	return out
}

// JSForwardsSent is how many pulls, acks and definition changes this
// bridge forwarded to consumers' owners.
func (b *Bridge) JSForwardsSent() uint64 { return b.jsc.forwards.Stats().Sent }
