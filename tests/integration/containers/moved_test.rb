# A worker that moves to another cgroup, as systemd or a container runtime
# can do (its PID written into another cgroup's cgroup.procs), is followed:
# within a few read passes its limit is the new cgroup's (workers --json:
# memory_limit and limit_cgroup), the new cgroup's values appear in
# collectd's csv output with the worker counted there, the old cgroup is no
# longer sampled, the move is logged once, and `memdiagctl workers` names
# the new cgroup (CGROUP, and cgroup in --json). Moved back, it is followed
# back. A worker with no cgroup the plugin can read is picked up once it is
# in one. (Before, the plugin kept the cgroup it saw at registration for the
# worker's whole life: its charge and limit stayed the first cgroup's until
# f91f944, the CGROUP column until 2026-12-02; on cgroup v1 that column
# named the v2 line, "/", not the memory cgroup.)
require_relative "helper"

class ContainersMovedTest < Minitest::Test
  include Containers::Test

  def setup
    start_bench("containers-moved", "HeartbeatInterval 1\n")
  end

  def test_a_worker_moved_to_another_cgroup_is_followed
    a_limit = Containers.rand_mib(300..400)
    b_limit = Containers.rand_mib(200..280)
    a = cgroup(limit: a_limit)
    b = cgroup(limit: b_limit)
    site = @bench.site
    w = @bench.start_worker("mover", cgroup: a, ballast: Containers.rand_mib(8..16))
    wait_limit(w, a, a_limit)
    a_pi = "memdiag-#{a.csv_instance}"
    b_pi = "memdiag-#{b.csv_instance}"
    site.wait_until("#{a_pi} counts the worker") { site.csv_last(a_pi, "count-workers") == 1.0 }

    # systemd or a runtime moves it
    File.write(b.file("cgroup.procs"), w.pid.to_s)
    assert_equal [w.pid], b.procs
    wait_limit(w, b, b_limit)
    site.wait_until("#{b_pi} counts the worker") { site.csv_last(b_pi, "count-workers") == 1.0 }
    site.wait_until("#{b_pi} has its limit") { site.csv_last(b_pi, "memory-limit") == b_limit.to_f }
    # a cgroup with no registered worker left is not sampled: a's rows stop
    # while b's go on (ten more passes: two re-reads of /proc/PID/cgroup)
    a_rows = site.csv_rows(a_pi, "memory-charge").size
    b_rows = site.csv_rows(b_pi, "memory-charge").size
    site.wait_until("ten more passes on #{b_pi}") { site.csv_rows(b_pi, "memory-charge").size >= b_rows + 10 }
    assert_operator site.csv_rows(a_pi, "memory-charge").size, :<=, a_rows + 1, "#{a_pi} is no longer sampled"
    moves = move_lines(w)
    assert_equal 1, moves.size, "logged once:\n#{site.plugin_log}"
    assert_includes moves.first, "moved from cgroup #{a.relative} to cgroup #{b.relative}; " \
                                 "its charge and limit are now read from #{b.path}"

    # and back
    File.write(a.file("cgroup.procs"), w.pid.to_s)
    wait_limit(w, a, a_limit)
    assert_equal 2, move_lines(w).size, site.plugin_log
    assert_includes move_lines(w).last, "moved from cgroup #{b.relative} to cgroup #{a.relative}"
    puts format("# %s: limit %d MiB -> %s limit %d MiB -> back", a.relative, a_limit / Containers::MiB,
                b.relative, b_limit / Containers::MiB)
  end

  # A cgroup's name is whoever made it's text (systemd delegates a user's
  # subtree to that user): a worker moved into one named with a terminal
  # escape is logged and listed with '?' for the escape's control byte.
  # Before, the move's log line and limit_cgroup carried the ESC byte.
  def test_a_cgroup_named_with_an_escape_is_shown_clean
    a = cgroup(limit: Containers.rand_mib(300..400))
    b = cgroup(limit: Containers.rand_mib(200..280), name: "#{Containers::Cgroup.next_name}-\e[31mred")
    site = @bench.site
    w = @bench.start_worker("escaped", cgroup: a, ballast: Containers.rand_mib(8..16))
    wait_limit(w, a, a.limit)
    File.write(b.file("cgroup.procs"), w.pid.to_s)
    clean = b.relative.tr("\e", "?")
    e = site.wait_until("workers --json names #{clean}") do
      x = site.workers_json.find { |y| y["pid"] == w.pid }
      x if x && x["cgroup"] == clean
    end
    assert_equal b.path.tr("\e", "?"), e["limit_cgroup"], e.inspect
    site.wait_until("the move is logged") { move_lines(w).size == 1 }
    line = move_lines(w).first
    refute_includes line, "\e", line
    assert_includes line, "to cgroup #{clean}; its charge and limit are now read from #{b.path.tr("\e", "?")}"
  end

  # A worker whose cgroup could not be read at registration (here its path
  # is longer than the 511 bytes the plugin takes; out of file descriptors,
  # or a cgroup being made or moved meanwhile, do the same) was never looked
  # at again: no limit and no charge for its whole life, and nothing in the
  # log said why. The log says why once; it is tried again at growing gaps,
  # and once it is in a cgroup that can be read, that one is its own.
  def test_a_worker_without_a_readable_cgroup_is_picked_up_once_it_is_in_one
    deep = cgroup
    3.times { |i| deep = cgroup(parent: deep, name: "#{i}#{'d' * 240}") }
    assert_operator deep.relative.bytesize, :>, 511
    site = @bench.site
    w = @bench.start_worker("late", cgroup: deep, ballast: Containers.rand_mib(8..16))
    said = /worker \d+ \('late' pid #{w.pid}\): no memory cgroup can be read for it \(.+\): no cgroup limit or charge/
    site.wait_until("the log says why #{w.name} has no cgroup") { site.plugin_log.match?(said) }
    e = site.workers_json.find { |x| x["pid"] == w.pid }
    assert_nil e["limit_cgroup"], e.inspect

    limit = Containers.rand_mib(200..300)
    b = cgroup(limit: limit)
    File.write(b.file("cgroup.procs"), w.pid.to_s)
    wait_limit(w, b, limit)
    found = site.plugin_log.lines.grep(/worker \d+ \('late' pid #{w.pid}\): its cgroup/)
    assert_equal 1, found.size, site.plugin_log
    assert_includes found.first, "its cgroup #{b.relative} can be read now; its charge and limit are read from #{b.path}"
    assert_equal 1, site.plugin_log.lines.grep(said).size, "said once:\n#{site.plugin_log}"
    b_pi = "memdiag-#{b.csv_instance}"
    site.wait_until("#{b_pi} counts the worker") { site.csv_last(b_pi, "count-workers") == 1.0 }
    puts "# #{site.plugin_log.lines.grep(said).first.strip}"
  end

  private

  def wait_limit(w, cg, limit)
    site = @bench.site
    e = site.wait_until("workers --json gives #{w.name}'s limit from #{cg.path}") do
      x = site.workers_json.find { |y| y["pid"] == w.pid }
      x if x && x["limit_cgroup"] == cg.path && x["memory_limit"] == limit
    end
    assert_equal "cgroup", e["memory_limit_source"], e.inspect
    # the same pass moved its cgroup's name
    assert_equal cg.relative, e["cgroup"], e.inspect
    table = site.ctl("workers")
    assert table.ok?, table.to_s
    row = table.out.lines.find { |l| l.split[1] == w.pid.to_s }
    refute_nil row, table.out
    assert_equal cg.relative, row.split.last, "the CGROUP column:\n#{table.out}"
  end

  def move_lines(w) = @bench.site.plugin_log.lines.grep(/worker \d+ \('#{w.name}' pid #{w.pid}\) moved from/)
end
