# Deterministic noise in [-1, 1] for the trace generators (generate.rb and
# families.rb): an xorshift32 sequence from a seed, the same on every
# machine. A seed of 0 (mod 2^32) is taken as 1 (xorshift would stay at 0).
class Noise
  def initialize(seed)
    @s = (seed & 0xffffffff).nonzero? || 1
  end

  def next
    @s ^= (@s << 13) & 0xffffffff
    @s ^= @s >> 17
    @s ^= (@s << 5) & 0xffffffff
    @s / 2147483647.5 - 1.0
  end
end
