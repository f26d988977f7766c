# frozen_string_literal: true

module Memdiag
  module Hook
    VERSION = "0.1.0"
  end
end
