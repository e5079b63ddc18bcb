package ocpp

import (
	"fmt"
	"sync"
	"time"

	"github.com/lorenzodonini/ocpp-go/ocpp"
	"github.com/lorenzodonini/ocpp-go/ocppj"
	"github.com/lorenzodonini/ocpp-go/ws"
)

// maxQueued bounds the requests waiting for one box.
const maxQueued = 64

// dispatcher sends the server's requests (ChangeAvailability) to the boxes, one at a
// time per box as OCPP-J requires, and keeps each box's pending request for the OCPP-J
// layer to match its answer. It replaces ocpp-go's DefaultServerDispatcher and
// ServerState, whose shared locks deadlock when many boxes disconnect at once: here
// each box has its own lock, a request waiting for its answer has its own timer, and
// no goroutine serves all boxes.
type dispatcher struct {
	mu       sync.RWMutex
	boxes    map[string]*pending
	running  bool
	timeout  time.Duration
	network  ws.WsServer
	onCancel ocppj.CanceledRequestHandler
	group    *group // runs the writes
}

// pending is one box's queue: queue[0] is in flight while inflight is set.
type pending struct {
	mu       sync.Mutex
	queue    []ocppj.RequestBundle
	inflight bool
	timer    *time.Timer
	state    ocppj.ClientState
}

var (
	_ ocppj.ServerDispatcher = (*dispatcher)(nil)
	_ ocppj.ServerState      = (*dispatcher)(nil)
)

// newDispatcher returns a dispatcher that fails a request unanswered after timeout and
// writes on goroutines of g. It is its own ServerState: give it to ocppj.NewServer
// twice.
func newDispatcher(timeout time.Duration, g *group) *dispatcher {
	return &dispatcher{boxes: map[string]*pending{}, timeout: timeout, group: g}
}

func (d *dispatcher) Start()                                               { d.mu.Lock(); d.running = true; d.mu.Unlock() }
func (d *dispatcher) Stop()                                                { d.mu.Lock(); d.running = false; d.mu.Unlock() }
func (d *dispatcher) IsRunning() bool                                      { d.mu.RLock(); defer d.mu.RUnlock(); return d.running }
func (d *dispatcher) SetTimeout(t time.Duration)                           { d.timeout = t }
func (d *dispatcher) SetOnRequestCanceled(cb ocppj.CanceledRequestHandler) { d.onCancel = cb }
func (d *dispatcher) SetNetworkServer(s ws.WsServer)                       { d.network = s }
func (d *dispatcher) SetPendingRequestState(ocppj.ServerState)             {}

func (d *dispatcher) box(id string) *pending {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.boxes[id]
}

// CreateClient starts the queue of a box that connected.
func (d *dispatcher) CreateClient(id string) {
	d.mu.Lock()
	d.boxes[id] = &pending{state: ocppj.NewClientState()}
	d.mu.Unlock()
}

// DeleteClient drops the queue of a box that disconnected and fails its requests, in
// order, as canceled.
func (d *dispatcher) DeleteClient(id string) {
	d.mu.Lock()
	b := d.boxes[id]
	delete(d.boxes, id)
	d.mu.Unlock()
	if b == nil {
		return
	}
	b.mu.Lock()
	q := b.queue
	b.queue, b.inflight = nil, false
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
	for _, r := range q {
		if d.onCancel != nil {
			d.onCancel(id, r.Call.UniqueId, r.Call.Payload, ocpp.NewError(ocppj.GenericError, "the charge box disconnected", r.Call.UniqueId))
		}
	}
}

// SendRequest queues req for box id and sends it when the box has no other request
// in flight. The write happens on another goroutine: the caller may hold locks of the
// OCPP layer. It fails once the service is closing.
func (d *dispatcher) SendRequest(id string, req ocppj.RequestBundle) error {
	b := d.box(id)
	if b == nil {
		return fmt.Errorf("charge box %s is not connected", id)
	}
	b.mu.Lock()
	if len(b.queue) >= maxQueued {
		b.mu.Unlock()
		return fmt.Errorf("%d requests already wait for charge box %s", maxQueued, id)
	}
	if !b.inflight { // send takes b.mu first: it finds req queued
		if !d.group.Go(func() { d.send(id, b) }) {
			b.mu.Unlock()
			return errClosing
		}
		b.inflight = true
	}
	b.queue = append(b.queue, req)
	b.mu.Unlock()
	return nil
}

// send writes the head of b's queue; b.inflight is set.
func (d *dispatcher) send(id string, b *pending) {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.inflight = false
		b.mu.Unlock()
		return
	}
	r := b.queue[0]
	callID := r.Call.UniqueId
	b.state.AddPendingRequest(callID, r.Call.Payload)
	b.timer = time.AfterFunc(d.timeout, func() {
		d.finish(id, b, callID, ocpp.NewError(ocppj.GenericError, "the charge box did not answer in time", callID))
	})
	b.mu.Unlock()
	if err := d.network.Write(id, r.Data); err != nil {
		d.finish(id, b, callID, ocpp.NewError(ocppj.GenericError, "the request could not be sent to the charge box", callID))
	}
}

// finish ends request callID if it is the one in flight, reports cancel (nil when the
// box answered) and sends the next.
func (d *dispatcher) finish(id string, b *pending, callID string, cancel *ocpp.Error) {
	b.mu.Lock()
	if len(b.queue) == 0 || b.queue[0].Call.UniqueId != callID {
		b.mu.Unlock()
		return
	}
	r := b.queue[0]
	b.queue = b.queue[1:]
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.state.DeletePendingRequest(callID)
	b.mu.Unlock()
	if cancel != nil && d.onCancel != nil {
		d.onCancel(id, callID, r.Call.Payload, cancel)
	}
	d.send(id, b)
}

// CompleteRequest ends the request the box answered.
func (d *dispatcher) CompleteRequest(id, requestID string) {
	if b := d.box(id); b != nil {
		d.finish(id, b, requestID, nil)
	}
}

// The ServerState of the OCPP-J layer, per box.

func (d *dispatcher) AddPendingRequest(id, reqID string, req ocpp.Request) {
	if b := d.box(id); b != nil {
		b.state.AddPendingRequest(reqID, req)
	}
}

func (d *dispatcher) DeletePendingRequest(id, reqID string) {
	if b := d.box(id); b != nil {
		b.state.DeletePendingRequest(reqID)
	}
}

// noState is the state of a box that is not connected: nothing pending.
var noState = ocppj.NewClientState()

func (d *dispatcher) GetClientState(id string) ocppj.ClientState {
	if b := d.box(id); b != nil {
		return b.state
	}
	return noState
}

func (d *dispatcher) HasPendingRequest(id string) bool {
	b := d.box(id)
	return b != nil && b.state.HasPendingRequest()
}

func (d *dispatcher) HasPendingRequests() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, b := range d.boxes {
		if b.state.HasPendingRequest() {
			return true
		}
	}
	return false
}

func (d *dispatcher) ClearClientPendingRequest(string) {} // DeleteClient dropped the box
func (d *dispatcher) ClearAllPendingRequests()         {}
