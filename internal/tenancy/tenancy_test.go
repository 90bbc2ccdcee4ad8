package tenancy

import "testing"

func TestParseAndString(t *testing.T) {
	const text = "0190a9c2-7d5e-7c4e-9a1b-3f2e1d0c9b8a"
	id, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if id.String() != text {
		t.Fatalf("round trip: got %s, want %s", id, text)
	}
	if (TenantID{}).String() != "00000000-0000-0000-0000-000000000000" {
		t.Fatalf("the default tenant reads %s", TenantID{})
	}
	if _, err := Parse("not-a-uuid"); err == nil {
		t.Fatal("a bad UUID parsed")
	}
}
