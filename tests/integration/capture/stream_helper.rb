# Shared by the tests of streams that break (capture_stream_*): a capture
# whose plan is one heap dump, streamed over the worker's connection
# (DumpTransfer stream), from a worker with enough ballast that the stream
# lasts a few seconds, so that a test can act while it runs.
require_relative "helper"

module StreamCapture
  # About 190 bytes of dump per ballast object: 2 million make a 370 MB dump
  # that takes a few seconds to stream here, ample to act in the middle.
  BALLAST = Integer(ENV.fetch("MEMDIAG_STREAM_BALLAST", "2000000"))

  KEYS = <<~KEYS.freeze
    Plan "dump"
    DumpTransfer "stream"
  KEYS

  module_function

  def bench(label, extra = "")
    Capture::Bench.new(label, KEYS + extra)
  end

  # The worker, once its ballast is built (the hook registers before).
  def start_worker(bench, name, ballast: BALLAST)
    w = bench.start_leaker(name, rate: Capture::MiB, max: 4 * Capture::MiB, ballast: ballast)
    bench.site.wait_until("#{name} has built its ballast") do
      raise "#{name} exited:\n#{w.output}" unless w.alive?

      w.output.include?("ballast: #{ballast} objects")
    end
    w
  end

  # Starts the capture and waits until the first dump's bytes are arriving:
  # the hidden temporary file the plugin writes into holds some. Returns
  # the capture folder and that file.
  def start_and_wait_streaming(bench, worker)
    site = bench.site
    r = bench.capture(worker)
    raise "memdiagctl capture failed: #{r}" unless r.ok?

    found = nil
    deadline = Time.now + E2E::WAIT
    until found
      raise "no stream began within #{E2E::WAIT} s\n--- collectd.log\n#{site.log}" if Time.now > deadline

      bench.folders(worker).each do |dir|
        Dir.children(dir).grep(/\A\.heap-1\.json.*\.partial\z/).each do |f|
          path = File.join(dir, f)
          found = [dir, path] if (File.size?(path) || 0).positive?
        end
      end
      sleep 0.02 unless found
    end
    found
  end

  # Every entry under the capture directory whose name starts with a dot
  # (temporary files of streams) or that is a heap dump.
  def debris(bench)
    Dir.glob("**/.*", File::FNM_DOTMATCH, base: bench.captures)
       .reject { |p| %w[. ..].include?(File.basename(p)) }
  end

  def heap_files(dir)
    Dir.children(dir).grep(/\Aheap-\d/)
  end

  # Processes whose command line names this path (the worker and any dump
  # child it forked, which an orphaned stream must not leave running).
  def processes_naming(path)
    Dir.glob("/proc/[0-9]*/cmdline").filter_map do |f|
      pid = Integer(File.basename(File.dirname(f)))
      pid if File.read(f).split("\0").include?(path)
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
  end
end
