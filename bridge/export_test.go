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
