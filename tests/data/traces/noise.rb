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

# The same sequence shaped as a normal's noise (Box-Muller on two draws),
# scaled by 1/sqrt(3) so that its variance is the uniform noise's: a trace
# made with either at the same amplitude has the same noise power, and the
# normal's lows stray further (tests/integration/replay/families_test.rb).
class NormalNoise < Noise
  def next
    if @spare
      v = @spare
      @spare = nil
      return v
    end
    u1 = (super + 1) / 2
    u2 = (super + 1) / 2
    r = Math.sqrt(-2 * Math.log([u1, 1e-12].max)) / Math.sqrt(3)
    @spare = r * Math.sin(2 * Math::PI * u2)
    r * Math.cos(2 * Math::PI * u2)
  end
end
