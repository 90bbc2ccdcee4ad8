package jsonscan

// MemberError carries an error the member function of Members returned, so
// that a caller can tell it from the scanner's own (a syntax error).
type MemberError struct{ Err error }

func (e *MemberError) Error() string { return e.Err.Error() }
func (e *MemberError) Unwrap() error { return e.Err }

// Members walks the object at the cursor (the next non-space byte must be
// '{'), calling member with each member's name (unescaped) and the cursor
// on its value, which member consumes. The name is only valid during the
// call: a switch on string(name) does not allocate. An error of member
// comes back wrapped in *MemberError; any other is the scanner's.
func (s *Scanner) Members(member func(name []byte) error) error {
	if err := s.Consume('{'); err != nil {
		return err
	}
	if s.Peek() == '}' {
		s.Next()
		return nil
	}
	for {
		name, escaped, err := s.Str()
		if err != nil {
			return err
		}
		if err := s.Consume(':'); err != nil {
			return err
		}
		if escaped {
			name = []byte(Unescape(name))
		}
		if err := member(name); err != nil {
			return &MemberError{Err: err}
		}
		switch s.Peek() {
		case '}':
			s.Next()
			return nil
		case ',':
			s.Next()
		default:
			return s.ErrAt("expected ',' or '}'")
		}
	}
}
