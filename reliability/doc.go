// Package reliability holds process-level tests of `chargenet serve`, run against the
// real binary: hostile input, concurrent writers and If-Match races, kill -9 crashes,
// database outages, slow clients and graceful shutdown. It has no code outside its tests.
//
// The tests are CI-sized by default; CHARGENET_LONG=1 runs the long mode (10 s of
// concurrent writers, more rounds). Each test logs its figures (requests tried, status
// codes, writes verified, recovery time); run with -v to see them.
package reliability
