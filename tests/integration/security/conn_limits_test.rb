# Issue 24, finding 5: one process holding the worker certificate opened
# hundreds of registered connections (337 used all of collectd's 1024
# descriptors: operators timed out, new workers could not register). Now a
# process may register at most 4 connections, a uid three quarters of the
# workers' slots, and the last MaxConnections slots are kept for operators:
# the rest are refused with a Goodbye naming the limit, the operator is
# answered and another worker registers.
require_relative "helper"

class SecurityConnLimitsTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("sec-conns", Security.keys + "MaxConnections 64\n")
  end

  def test_one_process_cannot_take_every_slot
    a = Security.attacker(@bench, "conns", "--count", "60")
    site = @bench.site
    site.wait_until("the attacker is done connecting") { a.output.match?(/registered \d+ refused \d+/) }
    registered, refused = a.output[/registered (\d+) refused (\d+)/, 0].scan(/\d+/).map(&:to_i)
    puts "one process: #{registered} connections registered, #{refused} refused"
    assert_equal 4, registered, a.output
    assert_equal 56, refused
    site.wait_log(/refused worker hello from pid #{a.pid} uid #{Security::NOBODY}: too many connections from this process/)
    # the operator is answered and another worker still gets in
    ctl = site.ctl("workers", "--json")
    assert ctl.ok?, ctl.to_s
    assert_equal 4, JSON.parse(ctl.out).count { |x| x["pid"] == a.pid }
    Security.assert_unharmed(self, site)
  end
end
