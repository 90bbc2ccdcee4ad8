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
