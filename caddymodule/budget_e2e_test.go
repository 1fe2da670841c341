package caddymodule

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// budgetPrice makes every request of the tests below cost exactly 1 USD:
// the mock counts the prompt "b #N" as 2 input tokens, at 0.5 USD each
// (500000 USD per million), and output is free.
const budgetPrice = "\t\tprice * input 500000 output 0\n"

// spentOn returns the spend of a budget as an admin endpoint reports it
// (-1 when it is not listed).
func spentOn(t *testing.T, admin, scope, name string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/llm_gateway/budgets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var views []budgetView
	if err := json.NewDecoder(resp.Body).Decode(&views); err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.Scope == scope && v.Name == name {
			return v.SpentUSD
		}
	}
	return -1
}

// TestKeyBudgetRealRequests: requests through the mock (usage known
// exactly, 1 USD each) spend a key's budget of 3 USD; the fourth request
// is served by the other key, and the caller's budget of 5 USD refuses
// the sixth with 429.
func TestKeyBudgetRealRequests(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 6, 1, 8, 0, 0, 0, time.UTC))
	m, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, "\tllm_gateway {\n"+budgetPrice+
		"\t\tapi_key "+gatewayKey+" {\n\t\t\tid spender\n\t\t\tbudget 5 usd per daily\n\t\t}\n"+
		"\t\tpool bude {\n\t\t\tmodels *\n\t\t\tstrategy priority\n"+
		"\t\t\tkey sk-e1 "+base+" {\n\t\t\t\tid e1\n\t\t\t\tpriority 1\n\t\t\t\tbudget 3 usd per daily\n\t\t\t}\n"+
		"\t\t\tkey sk-e2 "+base+" {\n\t\t\t\tid e2\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n\t}\n", "")
	var via []string
	for i := 1; i <= 6; i++ {
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-4o", "b #"+strconv.Itoa(i), false))
		if i == 6 {
			if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "gateway key spender is over its budget of 5 USD daily (spent 5.0000 USD)") {
				t.Fatalf("request 6 over the caller's budget: %d %s", resp.StatusCode, b)
			}
			break
		}
		if resp.StatusCode != 200 || gjson.GetBytes(b, "usage.prompt_tokens").Int() != 2 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		via = append(via, resp.Header.Get("X-Routed-Via"))
		// the cost is booked when the request's log entry is written,
		// right after the client has its answer
		eventually(t, 5*time.Second, "request "+strconv.Itoa(i)+" booked", func() bool {
			return spentOn(t, admin, "gateway_key", "spender") == float64(i)
		})
	}
	if strings.Join(via, " ") != "bude/e1 bude/e1 bude/e1 bude/e2 bude/e2" {
		t.Fatalf("served via %v, want e1 three times (its 3 USD), then e2", via)
	}
	if got := spentOn(t, admin, "key", "bude/e1"); got != 3 {
		t.Errorf("e1 spent %v, want 3", got)
	}
	if m.Stats("sk-e1").Requests != 3 || m.Stats("sk-e2").Requests != 2 {
		t.Errorf("upstream requests e1 %d e2 %d, want 3 and 2", m.Stats("sk-e1").Requests, m.Stats("sk-e2").Requests)
	}
}

// TestClusterBudgetShared: two instances on one Redis share a key's
// spend: the key's budget of 3 USD (1 USD a request) lets exactly three
// requests reach it across the cluster, whichever instance serves them;
// the rest go to the other key.
func TestClusterBudgetShared(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	m, base := mock(t, mockupstream.Config{})
	site := "\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n" + budgetPrice +
		"\t\tstate redis {\n\t\t\taddress " + addr + "\n\t\t\tprefix \"" + prefix + "\"\n\t\t}\n" +
		cpool("cbud", []string{"models *", "strategy priority"},
			ckey("sk-cb1", base, "cb1", "priority 1", "budget 3 usd per daily"),
			ckey("sk-cb2", base, "cb2", "priority 2")) + "\t}\n"
	insts := startCluster(t, 2, site)
	c := clusterClient(t)
	var via []string
	for i := 0; i < 6; i++ {
		in := insts[i%2]
		r := send(c, in, i%2, "gpt-4o", "b")
		if r.err != nil || r.code != 200 {
			t.Fatalf("request %d through instance %d: %v", i, i%2, r)
		}
		via = append(via, r.via)
		if r.via == "cbud/cb1" {
			n := float64(countOf(via, "cbud/cb1"))
			eventually(t, 5*time.Second, "request booked", func() bool { return spentOn(t, in.Admin, "key", "cbud/cb1") >= n })
		}
	}
	if countOf(via, "cbud/cb1") != 3 || m.Stats("sk-cb1").Requests != 3 {
		t.Fatalf("served via %v (cb1 asked %d times); want exactly 3 on cb1 across both instances", via, m.Stats("sk-cb1").Requests)
	}
	for i, in := range insts {
		if got := spentOn(t, in.Admin, "key", "cbud/cb1"); got != 3 {
			t.Errorf("instance %d sees cb1's spend as %v, want 3", i, got)
		}
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestBudgetEvents: the events stream sends a `budget` event when a key's
// budget reaches its warning level and when it is used up, and a `key`
// event budget_exceeded when the key leaves rotation.
func TestBudgetEvents(t *testing.T) {
	shiftBudgetClock(t, time.Date(2031, 9, 1, 9, 0, 0, 0, time.UTC))
	_, base := mock(t, mockupstream.Config{})
	_, admin := adminGateway(t, "\tllm_gateway {\n\t\tauth off\n\t\tpool budev {\n\t\t\tmodels *\n"+
		"\t\t\tkey sk-ev1 "+base+" {\n\t\t\t\tid ev1\n\t\t\t\tbudget 2 usd per monthly {\n\t\t\t\t\twarn 50%\n\t\t\t\t}\n\t\t\t}\n"+
		"\t\t\tkey sk-ev2 "+base+" {\n\t\t\t\tid ev2\n\t\t\t}\n\t\t}\n\t}\n", "")
	sr := openEvents(t, admin)
	bk := book(t)
	bk.charge(spendCharge{Pool: "budev", KeyID: "ev1", USD: 1.5, Known: true})
	var be budgetEvent
	if err := json.Unmarshal([]byte(sr.await(t, "budget")), &be); err != nil || be.Type != "budget_warning" || be.Scope != "key" ||
		be.Name != "budev/ev1" || be.Key != "ev1" || be.SpentUSD != 1.5 || be.LimitUSD != 2 || be.Budget != "2 USD monthly" {
		t.Fatalf("warning event %+v %v", be, err)
	}
	bk.charge(spendCharge{Pool: "budev", KeyID: "ev1", USD: 0.5, Known: true})
	// the key's state change and the budget event come in the same tick,
	// in either order
	var ke keyEvent
	be = budgetEvent{}
	for ke.Type == "" || be.Type == "" {
		ev, data, err := sr.next()
		if err != nil {
			t.Fatalf("waiting for the key and budget events: %v (key %+v, budget %+v)", err, ke, be)
		}
		switch ev {
		case "key":
			if err := json.Unmarshal([]byte(data), &ke); err != nil {
				t.Fatal(err)
			}
		case "budget":
			if err := json.Unmarshal([]byte(data), &be); err != nil {
				t.Fatal(err)
			}
		}
	}
	if be.Type != "budget_exceeded" || be.SpentUSD != 2 || !be.ResetsAt.Equal(time.Date(2031, 10, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("exceeded event %+v", be)
	}
	if ke.Type != "budget_exceeded" || ke.Key != "ev1" || ke.State != "budget" || ke.Prev != "ready" || ke.Reason != "budget" {
		t.Errorf("key event %+v", ke)
	}
}
