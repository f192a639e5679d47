"""Query stop words: the Snowball stop lists for German and English (plus question words).

Used on queries only (the index keeps every word, so a phrase of stop words still finds
itself). Dropping them keeps "how do I ..." from matching every note that says "how".
Measured with bench/fusion_sweep.py: BM25 nDCG@10 +0.002 on German XQuAD sentences.
"""

GERMAN = frozenset("""
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
    anderm andern anderr anders auch auf aus bei bin bis bist da damit dann das dass dasselbe dazu
    daß dein deine deinem deinen deiner deines dem demselben den denn denselben der derer derselbe
    derselben des desselben dessen dich die dies diese dieselbe dieselben diesem diesen dieser
    dieses dir doch dort du durch ein eine einem einen einer eines einig einige einigem einigen
    einiger einiges einmal er es etwas euch euer eure eurem euren eurer eures für gegen gewesen hab
    habe haben hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres
    im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt kann kein
    keine keinem keinen keiner keines können könnte machen man manche manchem manchen mancher
    manches mein meine meinem meinen meiner meines mich mir mit muss musste nach nicht nichts noch
    nun nur ob oder ohne sehr sein seine seinem seinen seiner seines selbst sich sie sind so solche
    solchem solchen solcher solches soll sollte sondern sonst um und uns unser unsere unserem
    unseren unseres unter viel viele vielen vom von vor wann war waren warst warum was weg weil
    weiter welche welchem welchen welcher welches wem wen wenn wer werde werden weshalb wie wieder
    wieso will wir wird wirst wo wollen wollte wurde wurden während würde würden zu zum zur zwar
    zwischen über
""".split())

ENGLISH = frozenset("""
    a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself let me more most my myself no nor not of off on once only or other ought our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when where
    which while who whom why with would you your yours yourself yourselves
""".split())
