package pricing

import (
	"math"
	"math/bits"
	"slices"
	"sort"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/shopspring/decimal"
)

// The session is cut into spans at every instant where an input of the rules can change:
// a reading, a state change, a local time of day, a midnight or a time-zone transition
// that a restriction refers to, a duration threshold, and the instant an energy threshold
// is reached. Within a span everything is constant (energy flows at one rate), so the
// element of each dimension is looked up once per span, at its start. Spans with the
// same elements make up a charging period.

// activity is what the session does during a span.
type activity uint8

const (
	idle     activity = iota // neither charging nor parking (SuspendedEVSE, before any energy)
	charging                 // TIME
	parking                  // PARKING_TIME
)

// The dimensions, as indexes.
const (
	dEnergy = iota
	dTime
	dParking
	dFlat
	nDims
)

var dimTypes = [nDims]chargenet.DimensionType{
	chargenet.DimensionEnergy, chargenet.DimensionTime, chargenet.DimensionParkingTime, chargenet.DimensionFlat,
}

// candidate is a component of a dimension: element e, component c.
type candidate struct{ e, c int }

// restriction is a TariffRestrictions parsed for evaluation; -1 (0 for days and dates)
// is unset.
type restriction struct {
	always             bool
	tod                bool
	todFrom, todTo     int64 // seconds of the day; todTo may be 86400
	dateFrom, dateTo   int64 // yyyymmdd
	days               uint8 // bit per time.Weekday
	minWh, maxWh       int64
	minDur, maxDur     int64
	minCurrent, maxCur int64 // A × 10^6
	minPowW, maxPowW   int64 // W × 10^6
}

type energyPoint struct{ t, e int64 }

type statePoint struct {
	t int64
	k StateKind
}

// measure is a power (W) or current (A) reported at t by reading r: v is the value ×
// 10^6, exact (see validMeasure).
type measure struct {
	t, v int64
	r    int
}

// periodAcc accumulates a charging period. el holds, for ENERGY, TIME and PARKING_TIME,
// the index in cands of the component that prices it, or -1.
type periodAcc struct {
	start, end           int64
	el                   [3]int
	qty                  [3]int64 // Wh, s charging, s parking
	maxPower, maxCurrent int      // index in powers / currents, or -1
	seenPower, seenCur   int
}

type pricer struct {
	t     *chargenet.Tariff
	u     *Usage
	loc   *time.Location
	s, e  int64
	minor int32

	restr      []restriction
	cands      [nDims][]candidate
	needDate   bool
	thresholds []int64 // Wh, ascending

	energy   []energyPoint
	times    []int64 // of the readings, each once
	states   []statePoint
	powers   []measure
	currents []measure

	// sweep state
	cum        int64 // Wh so far
	carry      int64 // Wh beyond a threshold reached in the previous span's last second
	thrIdx     int
	periods    []periodAcc
	flatCand   int // index in cands[dFlat], -1 until charged
	flatPeriod int
	memo       []uint32 // per element: gen<<1 | holds
	gen        uint32

	zStart, zEnd, zOff int64 // cached zone period
}

func newPricer(t *chargenet.Tariff, u *Usage, loc *time.Location) *pricer {
	minor, _ := chargenet.CurrencyMinorUnits(t.Currency)
	p := &pricer{
		t: t, u: u, loc: loc, s: u.Start.Unix(), e: u.End.Unix(), minor: int32(minor),
		restr: make([]restriction, len(t.Elements)), memo: make([]uint32, len(t.Elements)),
		flatCand: -1, zStart: 1, zEnd: 0,
	}
	for i := range t.Elements {
		el := &t.Elements[i]
		for j, c := range el.PriceComponents {
			for d, dt := range dimTypes {
				if c.Type == dt {
					p.cands[d] = append(p.cands[d], candidate{i, j})
				}
			}
		}
		r := parseRestrictions(el.Restrictions)
		p.restr[i] = r
		p.needDate = p.needDate || r.dateFrom != 0 || r.dateTo != 0
		for _, w := range []int64{r.minWh, r.maxWh} {
			if w > 0 {
				p.thresholds = append(p.thresholds, w)
			}
		}
	}
	slices.Sort(p.thresholds)
	p.thresholds = slices.Compact(p.thresholds)

	var ne, np, nc int
	for i := range u.Readings {
		r := &u.Readings[i]
		ne, np, nc = ne+boolInt(r.EnergyWh != nil), np+boolInt(r.PowerW != nil), nc+boolInt(r.CurrentA != nil)
	}
	p.energy = make([]energyPoint, 0, ne)
	p.powers, p.currents = make([]measure, 0, np), make([]measure, 0, nc)
	p.times = make([]int64, 0, len(u.Readings))
	for i := range u.Readings {
		r := &u.Readings[i]
		at := r.At.Unix()
		if n := len(p.times); n == 0 || p.times[n-1] != at {
			p.times = append(p.times, at)
		}
		if r.EnergyWh != nil {
			if n := len(p.energy); n > 0 && p.energy[n-1].t == at {
				p.energy[n-1].e = *r.EnergyWh
			} else {
				p.energy = append(p.energy, energyPoint{at, *r.EnergyWh})
			}
		}
		p.powers = appendMeasure(p.powers, at, r.PowerW, i)
		p.currents = appendMeasure(p.currents, at, r.CurrentA, i)
	}
	for _, s := range u.States {
		at := s.At.Unix()
		if n := len(p.states); n > 0 && p.states[n-1].t == at {
			p.states[n-1].k = s.Kind
		} else {
			p.states = append(p.states, statePoint{at, s.Kind})
		}
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendMeasure appends v of reading r at t, a later value at the same second replacing
// the earlier.
func appendMeasure(ms []measure, t int64, v *decimal.Decimal, r int) []measure {
	if v == nil {
		return ms
	}
	m := measure{t: t, v: micro(*v), r: r}
	if n := len(ms); n > 0 && ms[n-1].t == t {
		ms[n-1] = m
		return ms
	}
	return append(ms, m)
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// micro returns v × 10^6 for a v below 10^12 with at most 6 decimal places (or a
// restriction's limit, below 10^12 with at most 3).
func micro(v decimal.Decimal) int64 {
	if e := v.Exponent() + 6; e >= 0 && e < int32(len(pow10)) && v.NumDigits()+int(e) <= 18 {
		return v.CoefficientInt64() * pow10[e]
	}
	return v.Shift(6).IntPart()
}

var thousand = decimal.NewFromInt(1000)

func parseRestrictions(tr *chargenet.TariffRestrictions) restriction {
	r := restriction{minWh: -1, maxWh: -1, minDur: -1, maxDur: -1, minCurrent: -1, maxCur: -1, minPowW: -1, maxPowW: -1}
	if tr == nil {
		r.always = true
		return r
	}
	if tr.StartTime != "" || tr.EndTime != "" {
		r.tod = true
		r.todFrom, r.todTo = 0, 86400
		if tr.StartTime != "" {
			r.todFrom = secondsOfDay(tr.StartTime)
		}
		if tr.EndTime != "" && tr.EndTime != "00:00" {
			r.todTo = secondsOfDay(tr.EndTime)
		}
	}
	r.dateFrom, r.dateTo = dateNumber(tr.StartDate), dateNumber(tr.EndDate)
	for _, d := range tr.DayOfWeek {
		wd, _ := chargenet.Weekday(d)
		r.days |= 1 << wd
	}
	if tr.MinKWh != nil {
		r.minWh = tr.MinKWh.Mul(thousand).IntPart() // at most 3 decimal places: whole Wh
	}
	if tr.MaxKWh != nil {
		r.maxWh = tr.MaxKWh.Mul(thousand).IntPart()
	}
	if tr.MinDuration != nil {
		r.minDur = int64(*tr.MinDuration)
	}
	if tr.MaxDuration != nil {
		r.maxDur = int64(*tr.MaxDuration)
	}
	if tr.MinCurrent != nil {
		r.minCurrent = micro(*tr.MinCurrent)
	}
	if tr.MaxCurrent != nil {
		r.maxCur = micro(*tr.MaxCurrent)
	}
	if tr.MinPower != nil {
		r.minPowW = micro(tr.MinPower.Mul(thousand))
	}
	if tr.MaxPower != nil {
		r.maxPowW = micro(tr.MaxPower.Mul(thousand))
	}
	r.always = !r.tod && r.dateFrom == 0 && r.dateTo == 0 && r.days == 0 && r.minWh < 0 && r.maxWh < 0 &&
		r.minDur < 0 && r.maxDur < 0 && r.minCurrent < 0 && r.maxCur < 0 && r.minPowW < 0 && r.maxPowW < 0
	return r
}

// secondsOfDay parses a validated "HH:MM".
func secondsOfDay(s string) int64 {
	return int64((s[0]-'0')*10+(s[1]-'0'))*3600 + int64((s[3]-'0')*10+(s[4]-'0'))*60
}

// dateNumber turns a validated "YYYY-MM-DD" into yyyymmdd, "" into 0.
func dateNumber(s string) int64 {
	if s == "" {
		return 0
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			n = n*10 + int64(s[i]-'0')
		}
	}
	return n
}

// breakpoints returns the sorted instants that cut the session into spans, from s to e.
func (p *pricer) breakpoints() []int64 {
	bps := make([]int64, 0, 2+len(p.times)+len(p.states)+2*len(p.restr)+int((p.e-p.s)/86400+2)*8)
	bps = append(bps, p.s)
	inside := func(t int64) bool { return t > p.s && t < p.e }
	for _, t := range p.times {
		if inside(t) {
			bps = append(bps, t)
		}
	}
	bps = append(bps, p.e)
	for _, x := range p.states {
		if inside(x.t) {
			bps = append(bps, x.t)
		}
	}
	var sods []int64
	for i := range p.restr {
		r := &p.restr[i]
		for _, d := range []int64{r.minDur, r.maxDur} {
			if d >= 0 && inside(p.s+d) {
				bps = append(bps, p.s+d)
			}
		}
		if r.tod {
			sods = append(sods, r.todFrom, r.todTo%86400)
		}
		if r.days != 0 || r.dateFrom != 0 || r.dateTo != 0 {
			sods = append(sods, 0)
		}
	}
	if len(sods) > 0 {
		slices.Sort(sods)
		bps = p.localBreaks(bps, slices.Compact(sods))
	}
	slices.Sort(bps)
	return slices.Compact(bps)
}

// localBreaks appends the instants within the session at which the local time of day is
// one of sods (seconds of the day), and every time-zone transition: within one zone
// period the offset is fixed, so each local day has exactly one such instant per time of
// day, and a transition is where the local clock jumps.
func (p *pricer) localBreaks(bps, sods []int64) []int64 {
	for a := p.s; a < p.e; {
		p.zone(a)
		hi := min(p.zEnd, p.e)
		if a > p.s {
			bps = append(bps, a) // a transition
		}
		lo, hiL := a+p.zOff, hi+p.zOff
		for d := floorDiv(lo, 86400); d*86400 < hiL; d++ {
			for _, sod := range sods {
				if u := d*86400 + sod - p.zOff; u > a && u < hi {
					bps = append(bps, u)
				}
			}
		}
		a = hi
	}
	return bps
}

// zone caches the zone period of loc that contains a.
func (p *pricer) zone(a int64) {
	if a >= p.zStart && a < p.zEnd {
		return
	}
	t := time.Unix(a, 0).In(p.loc)
	_, off := t.Zone()
	zs, ze := t.ZoneBounds()
	p.zOff = int64(off)
	p.zStart, p.zEnd = math.MinInt64, math.MaxInt64
	if !zs.IsZero() {
		p.zStart = zs.Unix()
	}
	if !ze.IsZero() {
		p.zEnd = ze.Unix()
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Classes of time for spreading a register delta over the time between two readings.
const (
	clsCharging  = iota // state Charging
	clsUnknown          // no state, or Connected
	clsSuspended        // SuspendedEV, SuspendedEVSE
	clsAll              // every second
)

func class(k StateKind) int {
	switch k {
	case Charging:
		return clsCharging
	case SuspendedEV, SuspendedEVSE:
		return clsSuspended
	}
	return clsUnknown
}

// classSeconds returns the seconds of each class in [a, b).
func (p *pricer) classSeconds(a, b int64) (cs [3]int64) {
	j := sort.Search(len(p.states), func(i int) bool { return p.states[i].t > a }) - 1
	var k StateKind
	if j >= 0 {
		k = p.states[j].k
	}
	cur := a
	for n := j + 1; n < len(p.states) && p.states[n].t < b; n++ {
		cs[class(k)] += p.states[n].t - cur
		cur, k = p.states[n].t, p.states[n].k
	}
	cs[class(k)] += b - cur
	return cs
}

// segment is the register between two readings: ea at ta to eb at tb. The delta is spread
// linearly in time over the seconds of one class: charging if there are any, else
// unknown, else all of them. acc is the weight from ta to the current instant and r the
// register there.
type segment struct {
	ta, tb, ea, eb int64
	cls            int
	wtot, acc, r   int64
}

func (p *pricer) segment(k int, at int64) segment {
	a, b := p.energy[k], p.energy[k+1]
	sg := segment{ta: a.t, tb: b.t, ea: a.e, eb: b.e, cls: clsAll, wtot: b.t - a.t}
	cs := p.classSeconds(a.t, b.t)
	for _, c := range []int{clsCharging, clsUnknown} {
		if cs[c] > 0 {
			sg.cls, sg.wtot = c, cs[c]
			break
		}
	}
	if at > a.t {
		if sg.cls == clsAll {
			sg.acc = at - a.t
		} else {
			sg.acc = p.classSeconds(a.t, at)[sg.cls]
		}
	}
	sg.r = sg.ea + mulDiv(sg.eb-sg.ea, sg.acc, sg.wtot)
	return sg
}

// mulDiv returns floor(a*b/c) for a, b >= 0, c > 0 and a result that fits.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// ceilMulDiv returns ceil(a*b/c) under the same conditions.
func ceilMulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	return int64(q)
}

// run sweeps the session span by span.
func (p *pricer) run() {
	bps := p.breakpoints()
	if len(bps) == 1 { // a session of no duration: one empty period, FLAT still applies
		p.eval(p.s, p.s, 0, idle, -1, -1)
		return
	}
	var (
		k, j, pi, ci = -1, -1, -1, -1 // energy segment, state, power and current in force
		sg           segment
		sgOK         bool
	)
	for i := 0; i+1 < len(bps); i++ {
		a, b := bps[i], bps[i+1]
		for j+1 < len(p.states) && p.states[j+1].t <= a {
			j++
		}
		for pi+1 < len(p.powers) && p.powers[pi+1].t <= a {
			pi++
		}
		for ci+1 < len(p.currents) && p.currents[ci+1].t <= a {
			ci++
		}
		for k+1 < len(p.energy) && p.energy[k+1].t <= a {
			k, sgOK = k+1, false
		}
		var kind StateKind
		if j >= 0 {
			kind = p.states[j].k
		}
		var energy int64
		flowing := false
		if k >= 0 && k+1 < len(p.energy) {
			if !sgOK {
				sg, sgOK = p.segment(k, a), true
			}
			if sg.cls == clsAll || sg.cls == class(kind) {
				sg.acc += b - a
				flowing = sg.eb > sg.ea
			}
			rb := sg.eb
			if b < sg.tb {
				rb = sg.ea + mulDiv(sg.eb-sg.ea, sg.acc, sg.wtot)
			}
			energy, sg.r = rb-sg.r, rb
		}
		var act activity
		switch kind {
		case Charging:
			act = charging
		case SuspendedEV:
			act = parking
		case SuspendedEVSE:
			act = idle
		default:
			switch {
			case flowing:
				act = charging
			case p.cum > 0:
				act = parking
			}
		}
		p.split(a, b, energy, act, pi, ci)
	}
}

// split evaluates the span [a, b), first cutting it where the energy so far reaches an
// energy threshold of a restriction. The energy before the cut is exactly what reaches
// the threshold, and the cut is at the first whole second by which the span's steady
// flow has delivered it. When that is the span's end, the energy beyond the threshold is
// carried into the next span, which starts at that second.
func (p *pricer) split(a, b, energy int64, act activity, pi, ci int) {
	energy += p.carry
	p.carry = 0
	for energy > 0 && p.thrIdx < len(p.thresholds) {
		thr := p.thresholds[p.thrIdx]
		if thr <= p.cum {
			p.thrIdx++
			continue
		}
		need := thr - p.cum
		if need >= energy {
			break
		}
		p.thrIdx++
		cut := ceilMulDiv(need, b-a, energy)
		if cut >= b-a && b < p.e {
			p.carry = energy - need
			energy = need
			break
		}
		if cut >= b-a { // the session's last second: no later span to carry into
			break
		}
		p.eval(a, a+cut, need, act, pi, ci)
		a, energy = a+cut, energy-need
	}
	p.eval(a, b, energy, act, pi, ci)
}

// span is what a restriction is evaluated against: the instant a (the span's start) and
// the span's energy and measures.
type span struct {
	a, b, energy int64
	pi, ci       int
	local        bool
	sod, date    int64
	weekday      uint8
}

// eval looks up the element of each dimension for the span [a, b) and adds the span to
// the current period, or starts a new one when an element changed.
func (p *pricer) eval(a, b, energy int64, act activity, pi, ci int) {
	p.gen++
	sp := span{a: a, b: b, energy: energy, pi: pi, ci: ci}
	el := [3]int{-1, -1, -1}
	if energy > 0 || act == charging {
		el[dEnergy] = p.find(dEnergy, &sp)
	}
	switch act {
	case charging:
		el[dTime] = p.find(dTime, &sp)
	case parking:
		el[dParking] = p.find(dParking, &sp)
	}
	n := len(p.periods)
	if n == 0 || p.periods[n-1].el != el {
		p.periods = append(p.periods, periodAcc{start: a, el: el, maxPower: -1, maxCurrent: -1, seenPower: -1, seenCur: -1})
		n++
	}
	pa := &p.periods[n-1]
	pa.end = b
	pa.qty[dEnergy] += energy
	switch act {
	case charging:
		pa.qty[dTime] += b - a
	case parking:
		pa.qty[dParking] += b - a
	}
	if pi >= 0 && pi != pa.seenPower {
		pa.seenPower = pi
		if pa.maxPower < 0 || p.powers[pi].v > p.powers[pa.maxPower].v {
			pa.maxPower = pi
		}
	}
	if ci >= 0 && ci != pa.seenCur {
		pa.seenCur = ci
		if pa.maxCurrent < 0 || p.currents[ci].v > p.currents[pa.maxCurrent].v {
			pa.maxCurrent = ci
		}
	}
	if p.flatCand < 0 {
		if f := p.find(dFlat, &sp); f >= 0 {
			p.flatCand, p.flatPeriod = f, n-1
		}
	}
	p.cum += energy
}

// find returns the index in cands[d] of the first component of dimension d whose element's
// restrictions hold for the span, or -1.
func (p *pricer) find(d int, sp *span) int {
	for i, c := range p.cands[d] {
		if p.holds(c.e, sp) {
			return i
		}
	}
	return -1
}

// holds reports whether element e's restrictions all hold at the start of the span.
func (p *pricer) holds(e int, sp *span) bool {
	if m := p.memo[e]; m>>1 == p.gen {
		return m&1 == 1
	}
	ok := p.check(&p.restr[e], sp)
	p.memo[e] = p.gen << 1
	if ok {
		p.memo[e] |= 1
	}
	return ok
}

func (p *pricer) check(r *restriction, sp *span) bool {
	if r.always {
		return true
	}
	dur := sp.a - p.s
	if r.minDur >= 0 && dur < r.minDur || r.maxDur >= 0 && dur >= r.maxDur ||
		r.minWh >= 0 && p.cum < r.minWh || r.maxWh >= 0 && p.cum >= r.maxWh {
		return false
	}
	if r.tod || r.days != 0 || r.dateFrom != 0 || r.dateTo != 0 {
		p.localTime(sp)
		if r.tod {
			w := sp.sod
			var in bool
			switch {
			case r.todFrom < r.todTo:
				in = r.todFrom <= w && w < r.todTo
			case r.todFrom > r.todTo: // wraps past midnight
				in = w >= r.todFrom || w < r.todTo
			default:
				in = true
			}
			if !in {
				return false
			}
		}
		if r.days != 0 && r.days&(1<<sp.weekday) == 0 ||
			r.dateFrom != 0 && sp.date < r.dateFrom || r.dateTo != 0 && sp.date >= r.dateTo {
			return false
		}
	}
	if r.minCurrent >= 0 || r.maxCur >= 0 {
		if sp.ci < 0 {
			return false // no current is known: the restriction cannot be shown to hold
		}
		v := p.currents[sp.ci].v
		if r.minCurrent >= 0 && v < r.minCurrent || r.maxCur >= 0 && v >= r.maxCur {
			return false
		}
	}
	if r.minPowW >= 0 || r.maxPowW >= 0 {
		if sp.pi >= 0 {
			v := p.powers[sp.pi].v
			if r.minPowW >= 0 && v < r.minPowW || r.maxPowW >= 0 && v >= r.maxPowW {
				return false
			}
		} else if dur := sp.b - sp.a; dur > 0 {
			// No power reading: the span's average power, energy × 3600 / duration W, is
			// compared as energy × 3600 × 10^6 against the limit × duration.
			v := cmp128(sp.energy*3600, 1e6, r.minPowW, dur)
			if r.minPowW >= 0 && v < 0 || r.maxPowW >= 0 && cmp128(sp.energy*3600, 1e6, r.maxPowW, dur) >= 0 {
				return false
			}
		} else if r.minPowW > 0 {
			return false // no time, no power
		}
	}
	return true
}

// cmp128 compares a×b with c×d, all non-negative, without overflow.
func cmp128(a, b, c, d int64) int {
	h1, l1 := bits.Mul64(uint64(a), uint64(b))
	h2, l2 := bits.Mul64(uint64(max(c, 0)), uint64(d))
	switch {
	case h1 != h2:
		if h1 < h2 {
			return -1
		}
		return 1
	case l1 < l2:
		return -1
	case l1 > l2:
		return 1
	}
	return 0
}

// localTime fills in the span's local time of day, day of week and date.
func (p *pricer) localTime(sp *span) {
	if sp.local {
		return
	}
	p.zone(sp.a)
	l := sp.a + p.zOff
	days := floorDiv(l, 86400)
	sp.sod = l - days*86400
	sp.weekday = uint8((days%7 + 11) % 7) // 1970-01-01 was a Thursday
	if p.needDate {
		y, m, d := time.Unix(days*86400, 0).UTC().Date()
		sp.date = int64(y)*10000 + int64(m)*100 + int64(d)
	}
	sp.local = true
}
