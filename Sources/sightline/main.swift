import SightlineCore
import CSightlineLWS
import CSightlineOpenCV
import CTurboJPEG
print(SightlineVersion.string, sl_lws_pre(), TJSAMP_420)
