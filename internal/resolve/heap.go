package resolve

// minHeap is a binary min-heap ordered by less. The zero value needs less
// set before use.
type minHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *minHeap[T]) len() int { return len(h.items) }

func (h *minHeap[T]) push(x T) {
	q := append(h.items, x)
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(q[i], q[parent]) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
	h.items = q
}

// pop removes and returns the least item; the heap must not be empty.
func (h *minHeap[T]) pop() T {
	q := h.items
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		least := i
		if l := 2*i + 1; l < len(q) && h.less(q[l], q[least]) {
			least = l
		}
		if r := 2*i + 2; r < len(q) && h.less(q[r], q[least]) {
			least = r
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	h.items = q
	return top
}
