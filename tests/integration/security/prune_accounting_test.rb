# Issue 24, finding 4: with MaxUse, one worker made the plugin delete every
# other worker's captures: 40 hard links to one 5 MiB file counted 205 MiB,
# a folder mtime in 2100 made its folder the newest for ever, and its
# subdirectory made it impossible to prune, yet it still counted, so every
# later dump of every worker was skipped. Now each file counts once, the
# age comes from the folder's name (memdiag's record), and a folder that
# cannot be removed pushes nobody out: the other worker's first capture
# stays and its next dump is taken.
require_relative "helper"

class SecurityPruneAccountingTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("sec-prune", Security.keys + <<~KEYS)
      Plan "dump"
      DumpTransfer "file"
      DumpCompression none
      KeepFree "10M"
      MaxUse "60M"
      DumpSpaceFactor 1
      StepTimeout "20s"
    KEYS
  end

  # Captures the worker; returns its new folder once the plan has ended.
  def capture_ended(w)
    before = @bench.folders(w)
    r = @bench.capture(w)
    assert r.ok?, r.to_s
    dir = nil
    @bench.site.wait_until("the new capture of #{w.name} ended") do
      dir = (@bench.folders(w) - before).find { |d| @bench.manifest(d)&.dig("end") }
    end
    dir
  end

  def test_links_and_mtimes_prune_nobody_else
    victim = Security.attacker(@bench, "plain", name: "victim")
    first = capture_ended(victim)
    assert File.exist?(File.join(first, "heap-1.json"))
    bully = Security.attacker(@bench, "links", name: "bully")
    bad = capture_ended(bully)
    assert_equal 41, File.stat(File.join(bad, "heap-1.json")).nlink
    assert Dir.exist?(File.join(bad, "sub"))
    sleep 1.1 # a new folder name (one per second)
    second = capture_ended(victim)
    m = @bench.manifest(second)
    assert_equal "ok", m["steps"].first["status"], JSON.pretty_generate(m)
    assert File.exist?(File.join(first, "heap-1.json")), "the victim's first capture was pruned"
    assert File.exist?(File.join(second, "heap-1.json"))
    assert @bench.site.ctl("workers").ok?
  end
end
