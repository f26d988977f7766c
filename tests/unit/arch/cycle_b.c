/* Fixture for arch.symbol_cycles_detects: see cycle_a.c. */
int arch_fixture_a(int n);

int arch_fixture_b(int n) { return n > 0 ? arch_fixture_a(n - 1) : 1; }
