# Issue 4 acceptance: two hooked workers register; `memdiagctl workers` lists
# both with their PIDs and an RSS close to /proc; collectd's csv plugin
# writes their memory-rss values.
require_relative "../harness/harness"

class E2EWorkersTest < Minitest::Test
  def site = E2E::SharedSite.get("workers", workers: %w[e2e-alpha e2e-beta])

  def test_workers_json_lists_both_with_pid_name_and_rss_close_to_proc
    alpha, beta = site.workers
    site.wait_until("both workers report an RSS within 10% of /proc/PID/status VmRSS") do
      list = site.workers_json
      [alpha, beta].all? do |w|
        e = list.find { |x| x["pid"] == w.pid }
        e && e["rss"].positive? && (e["rss"] - w.vm_rss_bytes).abs <= w.vm_rss_bytes / 10
      end
    end
    list = site.workers_json
    [alpha, beta].each do |w|
      e = list.find { |x| x["pid"] == w.pid }
      refute_nil e, "#{w.name} missing from #{list}"
      assert_equal w.name, e["name"]
      assert_kind_of Integer, e["connection_id"]
      assert_operator e["connection_id"], :>, 0
    end
    ids = list.map { |x| x["connection_id"] }
    assert_equal ids.uniq, ids, "connection IDs are unique"
  end

  def test_workers_table_shows_both
    r = site.ctl("workers")
    assert r.ok?, r.to_s
    header, *rows = r.out.lines
    assert_match(/\bID\b.*\bPID\b.*\bNAME\b.*\bRSS\b/, header)
    site.workers.each do |w|
      row = rows.find { |l| l.split.include?(w.pid.to_s) }
      refute_nil row, "no row for pid #{w.pid} in:\n#{r.out}"
      assert_includes row, w.name
      assert_match(/\d+(\.\d)? (B|KiB|MiB|GiB)/, row, "RSS is human-readable")
    end
  end

  def test_csv_plugin_writes_memory_rss_for_each_worker
    list = site.workers_json
    site.workers.each do |w|
      e = list.find { |x| x["pid"] == w.pid }
      instance = e["instance"] || w.name
      files = nil
      site.wait_until("csv has memory-rss values for #{instance}") do
        files = Dir.glob(File.join(site.csv_dir, "e2e", "memdiag-#{instance}", "memory-rss-*"))
        files.any? { |f| File.readlines(f).size >= 3 }
      end
      values = File.readlines(files.first).drop(1).map { |l| l.split(",").map(&:to_f) }
      refute_empty values
      epoch, rss = values.last
      assert_operator epoch, :>, 1_600_000_000
      assert_operator rss, :>, 1024 * 1024, "a Ruby worker's RSS is more than 1 MiB"
      assert_in_delta w.vm_rss_bytes, rss, w.vm_rss_bytes * 0.5,
                      "csv RSS is the worker's, not some other process's"
    end
    workers_files = Dir.glob(File.join(site.csv_dir, "e2e", "memdiag*", "*"))
    refute_empty workers_files
  end
end
