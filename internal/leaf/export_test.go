package leaf

// Held reports whether c holds bytes a Publish under a Hold left for a
// Release, its flusher not woken for them.
func Held(c *Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}
