# Issue 24, finding 8: docs/fleet.md recommended the workers' own user as
# CaptureCommandUser, so every worker could SIGSTOP, ptrace or alter each
# upload (and read the storage credentials that user owns). The docs now
# recommend a dedicated shipping user, and the plugin says so in collectd's
# log, with the worker's name, whenever it runs CaptureCommand as the user
# (or the group) of the worker whose capture it ships.
require_relative "helper"

class SecuritySharedUserTest < Capture::Test
  def setup
    command = Security.command("say-ok", 'echo "shipped as $(id -un)"')
    @bench = Capture::Bench.new("sec-user", Security.keys + <<~KEYS)
      Plan "dump"
      DumpTransfer "file"
      StepTimeout "5s"
      CaptureCommand "#{command}"
      CaptureCommandUser "nobody"
    KEYS
  end

  def test_the_workers_own_user_as_capture_command_user_is_warned_about
    site = @bench.site
    w = Security.attacker(@bench, "plain")
    assert @bench.capture(w).ok?
    site.wait_until("CaptureCommand ran") do
      site.log.match?(/CaptureCommand for worker #{w.name} \(pid #{w.pid}\): exited with status 0/)
    end
    warning = site.log[/\[warning\] memdiag plugin: CaptureCommandUser nobody is the user of worker #{w.name} \(pid #{w.pid}\)[^\n]*/]
    refute_nil warning, site.log.lines.grep(/CaptureCommand/).join
    assert_match(/the worker can stop, trace or alter every upload; run CaptureCommand as a user of its own/, warning)
  end
end
