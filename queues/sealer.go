package queues

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
)

// sealer encrypts payloads of encrypted queues: AES-256-GCM, the stored
// payload is nonce (12 bytes) || ciphertext || tag. Safe for concurrent use.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if key == nil {
		return nil, nil
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("queues: EncryptionKey must be 32 bytes (64 hex characters), got %d bytes", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("queues: encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("queues: encryption key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(plain []byte) []byte {
	out := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(fmt.Sprintf("queues: no randomness for a nonce: %v", err))
	}
	return s.aead.Seal(out, out, plain, nil)
}

func (s *sealer) open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, fmt.Errorf("encrypted payload of %d bytes is too short", len(sealed))
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], nil)
}
