/* Fixture for arch.symbol_cycles_detects: cycle_a.c and cycle_b.c call each
 * other, a cycle the checker must name. Never linked into anything. */
int arch_fixture_b(int n);

int arch_fixture_a(int n) { return n > 0 ? arch_fixture_b(n - 1) : 0; }
