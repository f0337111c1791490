package catalog
import ("testing";"fmt")
func TestDbg(t *testing.T){
	in := "entries:\n 0:\n  - keywords:\n    -"
	_, a, e1 := decodeIndexFast(in)
	_, b, e2 := decodeIndexSlow([]byte(in))
	fmt.Printf("%#v %v\n%#v %v\n", a[0].entries[0].entry.Keywords, e1, b[0].entries[0].entry.Keywords, e2)
}
