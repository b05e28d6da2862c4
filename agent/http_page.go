package agent

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// headerNextToken carries the token of the next page of a list.
const headerNextToken = "X-Nomad-NextToken"

// maxPerPage caps ?per_page.
const maxPerPage = 10000

// pageOpts are a list request's paging parameters (Nomad's per_page,
// next_token and reverse).
type pageOpts struct {
	perPage   int
	nextToken string
	reverse   bool
}

func (p pageOpts) paging() bool { return p.perPage > 0 || p.nextToken != "" || p.reverse }

// parsePage reads ?per_page, ?next_token and ?reverse.
func parsePage(r *http.Request) (pageOpts, error) {
	var p pageOpts
	v := r.URL.Query()
	if s := v.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p, badRequest("Invalid per_page %q: must be a non-negative integer", s)
		}
		p.perPage = min(n, maxPerPage)
	}
	p.nextToken = v.Get("next_token")
	reverse, err := boolParam(r, "reverse")
	if err != nil {
		return p, err
	}
	p.reverse = reverse
	return p, nil
}

// paginate returns one page of items. Paging is done here, on the full
// list the server returned: items are ordered by key (descending with
// ?reverse), the page starts at the first item whose key is at or past
// next_token, and when more items follow, the key of the next one is sent
// as X-Nomad-NextToken. A token is stable across writes: it names a
// position in the key order, not an offset. Without paging parameters the
// list is returned in the server's order.
func paginate[T any](w http.ResponseWriter, p pageOpts, items []T, key func(T) string) []T {
	if items == nil {
		items = []T{}
	}
	if !p.paging() {
		return items
	}
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b T) int {
		if p.reverse {
			return strings.Compare(key(b), key(a))
		}
		return strings.Compare(key(a), key(b))
	})
	start := 0
	if p.nextToken != "" {
		start = len(items)
		for i, it := range items {
			c := strings.Compare(key(it), p.nextToken)
			if (!p.reverse && c >= 0) || (p.reverse && c <= 0) {
				start = i
				break
			}
		}
	}
	items = items[start:]
	if p.perPage > 0 && len(items) > p.perPage {
		w.Header().Set(headerNextToken, key(items[p.perPage]))
		items = items[:p.perPage]
	}
	return items
}
