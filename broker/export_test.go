package broker

// GuardEvery lets the tests of package broker_test check a running process's or server's leftovers sooner.
var GuardEvery = &guardEvery
